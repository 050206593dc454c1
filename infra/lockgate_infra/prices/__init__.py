"""Model prices: the table generated from ``genai-prices`` (``make prices``) and ``lockgate prices``."""
