"""The docs site (``docs/``, mkdocs): the reference pages generated from the code, and the check
that every command a page shows is run."""
