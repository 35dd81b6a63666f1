# The streaming loop of the openai-python README: `chunk.choices[0]` of every chunk, so a chunk with
# `choices: []` raises IndexError. Run by test/compat/readme-loops.test.ts with TOLLGATE_BASE_URL,
# TOLLGATE_KEY, TOLLGATE_MODEL and TOLLGATE_PROMPT set.
import os

from openai import OpenAI

client = OpenAI(api_key=os.environ["TOLLGATE_KEY"], base_url=os.environ["TOLLGATE_BASE_URL"], max_retries=0)

stream = client.chat.completions.create(
    model=os.environ["TOLLGATE_MODEL"],
    messages=[{"role": "user", "content": os.environ["TOLLGATE_PROMPT"]}],
    stream=True,
)
for chunk in stream:
    print(chunk.choices[0].delta.content or "", end="")
