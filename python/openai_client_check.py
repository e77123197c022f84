"""The official OpenAI Python client against `agentry serve`.

    python openai_client_check.py BASE_URL API_KEY MODEL [EXPECT_TEXT]

Lists the models, asks once without and once with streaming, and checks the
errors a client sees for an unknown model and a wrong key. Prints one JSON
object with what it saw; exits non-zero on the first mismatch.
"""

import json
import sys

import openai

base_url, key, model = sys.argv[1], sys.argv[2], sys.argv[3]
expect = sys.argv[4] if len(sys.argv) > 4 else None
seen = {}

client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=300)

models = client.models.list()
seen["models"] = [m.id for m in models.data]
assert seen["models"] == [model], seen

question = [
    {"role": "system", "content": "Answer in one short sentence."},
    {"role": "user", "content": "What is 12 times 7?"},
]
answer = client.chat.completions.create(model=model, messages=question)
seen["answer"] = answer.choices[0].message.content
seen["finish_reason"] = answer.choices[0].finish_reason
seen["usage"] = answer.usage.total_tokens if answer.usage else None
assert answer.object == "chat.completion", answer
assert answer.choices[0].message.role == "assistant", answer
assert seen["answer"], seen
if expect is not None:
    assert seen["answer"] == expect, seen

pieces = []
finish = None
for chunk in client.chat.completions.create(model=model, messages=question, stream=True):
    assert chunk.object == "chat.completion.chunk", chunk
    delta = chunk.choices[0].delta
    if delta.content:
        pieces.append(delta.content)
    finish = chunk.choices[0].finish_reason or finish
seen["streamed"] = "".join(pieces)
seen["stream_finish_reason"] = finish
assert seen["streamed"], seen
assert finish in ("stop", "length"), seen
if expect is not None:
    assert seen["streamed"] == expect, seen

try:
    client.chat.completions.create(model="no-such-model", messages=question)
    raise AssertionError("an unknown model was accepted")
except openai.NotFoundError as error:
    seen["unknown_model"] = error.status_code

try:
    openai.OpenAI(base_url=base_url, api_key="wrong-key", max_retries=0).models.list()
    raise AssertionError("a wrong key was accepted")
except openai.AuthenticationError as error:
    seen["wrong_key"] = error.status_code

print(json.dumps(seen))
