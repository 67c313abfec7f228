"""LLM clients: Answer Regeneration and LLM judges over OpenAI-compatible endpoints."""
