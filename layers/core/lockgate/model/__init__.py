"""The model client and what calls cost: the SDK adapter (timeouts, retries, errors), its retry
budget, prices, usage accounting, prompt-caching markers and the saved-response cache."""
