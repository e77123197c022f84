"""An agent served with the official A2A Python SDK (a2a-sdk), for agentry's A2A client to call.

    python a2a_echo_server.py PORT [TOKEN]

It streams: `working` with a progress message, the answer as an artifact
("Echo: <what it was told>", upper-cased), then `completed`. With TOKEN,
every request but the card must carry `Authorization: Bearer TOKEN`.
"""

import sys

import uvicorn
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

port = int(sys.argv[1])
token = sys.argv[2] if len(sys.argv) > 2 else None


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input()
        await updater.start_work(new_text_message("Listening…", task_id=context.task_id, context_id=context.context_id))
        await updater.add_artifact([new_text_part(f"Echo: {text}".upper())], name="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


card = AgentCard(
    name="Echo Agent",
    description="Repeats what it is told, loudly.",
    version="1.0.0",
    supported_interfaces=[AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0")],
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="echo", description="Repeats a text in capitals.", tags=["echo"])],
)

handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))


class Bearer(BaseHTTPMiddleware):
    async def dispatch(self, request, call_next):
        if token and not request.url.path.startswith("/.well-known/"):
            if request.headers.get("authorization") != f"Bearer {token}":
                return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "unauthorized"}}, status_code=401)
        return await call_next(request)


app.add_middleware(Bearer)
print(f"a2a echo agent on {port}", flush=True)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
