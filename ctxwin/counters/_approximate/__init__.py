"""The approximate counter: no tokenizer data; its fitted constants, vocabulary pieces and optional C accelerator."""
