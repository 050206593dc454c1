"""The built-in scheduled jobs: each takes its stores in its constructor and is called with a JobContext."""
