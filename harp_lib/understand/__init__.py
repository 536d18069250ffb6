"""Layer 2: reading a question's text -- the typed Intent, typo correction, time and number words."""
