"""Human approval: signed per-reviewer links, form tokens and the server-rendered pages."""
