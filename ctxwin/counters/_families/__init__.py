"""The exact offline tokenizer families: tiktoken (OpenAI, harmony, Llama, Qwen), Hugging Face ``tokenizers``
(DeepSeek), Mistral.
"""
