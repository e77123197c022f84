"""The official A2A Python SDK (a2a-sdk) as a client of an agentry agent served over A2A.

    python a2a_client_check.py BASE_URL API_KEY answer QUESTION
    python a2a_client_check.py BASE_URL API_KEY approval

`answer`: reads the card, streams the question, and reports the task's
states, the tool calls it saw and the answer.

`approval` (an agent whose first step calls a destructive tool): streams a
request that stops `input-required`, approves it in a blocking call, reads
the task back, starts another one and cancels it, and checks that a wrong
key gets nothing.

Prints one JSON object with what it saw; exits non-zero on an error.
"""

import asyncio
import json
import sys

import httpx
from google.protobuf.json_format import MessageToDict
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text, new_text_message
from a2a.types import CancelTaskRequest, GetTaskRequest, Role, SendMessageRequest, TaskState

base_url, key, scenario = sys.argv[1], sys.argv[2], sys.argv[3]


def state_name(state):
    return TaskState.Name(state)


async def client_for(token, streaming=True):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
    config = ClientConfig(streaming=streaming, httpx_client=http)
    return await create_client(base_url, client_config=config)


def ask(text, task_id=None):
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER, task_id=task_id))


async def follow(client, request):
    """Every response of a send: states, progress, answer, the task id."""
    seen = {"states": [], "progress": [], "answer": "", "task_id": None, "asks": ""}
    async for response in client.send_message(request):
        if response.HasField("task"):
            task = response.task
            seen["task_id"] = task.id
            seen["states"].append(state_name(task.status.state))
            if task.status.HasField("message"):
                seen["asks"] = get_message_text(task.status.message)
            for artifact in task.artifacts:
                seen["answer"] = "".join(p.text for p in artifact.parts)
        elif response.HasField("status_update"):
            update = response.status_update
            seen["task_id"] = update.task_id
            seen["states"].append(state_name(update.status.state))
            if update.status.HasField("message"):
                text = get_message_text(update.status.message)
                for part in update.status.message.parts:
                    if part.HasField("data"):
                        seen["progress"].append(MessageToDict(part.data))
                if update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                    seen["asks"] = text
        elif response.HasField("artifact_update"):
            seen["answer"] = "".join(p.text for p in response.artifact_update.artifact.parts)
        elif response.HasField("message"):
            seen["answer"] = get_message_text(response.message)
    return seen


async def main():
    client = await client_for(key)
    result = {"scenario": scenario}
    if scenario == "answer":
        seen = await follow(client, ask(sys.argv[4]))
        result.update(seen)
    elif scenario == "approval":
        first = await follow(client, ask("Delete a.txt"))
        result["first"] = first
        assert first["states"][-1] == "TASK_STATE_INPUT_REQUIRED", first
        blocking = await client_for(key, streaming=False)
        approved = await follow(blocking, ask("approve", task_id=first["task_id"]))
        result["approved"] = approved
        task = await client.get_task(GetTaskRequest(id=first["task_id"]))
        result["read_back"] = {
            "state": state_name(task.status.state),
            "artifacts": ["".join(p.text for p in a.parts) for a in task.artifacts],
        }
        second = await follow(client, ask("Delete b.txt"))
        canceled = await client.cancel_task(CancelTaskRequest(id=second["task_id"]))
        result["canceled"] = state_name(canceled.status.state)
        stranger = await client_for("not-a-key")
        try:
            await follow(stranger, ask("hello"))
            result["wrong_key"] = "answered"
        except Exception as error:  # the SDK raises its own error types
            result["wrong_key"] = type(error).__name__
        await blocking.close()
        await stranger.close()
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    await client.close()
    print(json.dumps(result))


asyncio.run(main())
