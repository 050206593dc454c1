"""Scheduled jobs: named pieces of housekeeping run by EventBridge Scheduler under a lease."""
