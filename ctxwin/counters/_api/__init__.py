"""The opt-in networked counters: Anthropic's and Gemini's count-tokens endpoints, with their on-disk store."""
