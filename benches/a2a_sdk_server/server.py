"""A minimal A2A 1.0 server on the official Python SDK (a2a-sdk 1.3.0), for
benches/session.rs to measure beside `mur run`: an echo agent, the JSON-RPC binding
over HTTP on 127.0.0.1, tasks in memory, served by uvicorn (on uvloop and httptools, which it picks itself
when installed: requirements.txt).

The listening socket is bound first and its port printed on stdout, then the SDK is
imported and served, so "spawn to the Agent Card answering" includes every import.
The bearer token arrives on stdin (never on the command line) and is checked by
Starlette's AuthenticationMiddleware, which is how the SDK takes a caller: its
DefaultServerCallContextBuilder reads `request.user`. No header or a wrong token: 401.

Usage: python server.py   (token on stdin; prints the port, then serves until killed)
"""

import socket
import sys

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
sock.listen(1024)
TOKEN = sys.stdin.readline().strip()
print(sock.getsockname()[1], flush=True)

import hmac  # noqa: E402

import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.authentication import (  # noqa: E402
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    SimpleUser,
)
from starlette.middleware import Middleware  # noqa: E402
from starlette.middleware.authentication import AuthenticationMiddleware  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402


class Echo(AgentExecutor):
    """The same shape as mur's echo: a task, working, an artifact, completed."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        await updater.start_work()
        await updater.add_artifact([new_text_part(text)], name="echo")
        await updater.complete(
            new_text_message(text, context_id=task.context_id, task_id=task.id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


class Bearer(AuthenticationBackend):
    """Accepts exactly one token, compared in constant time."""

    async def authenticate(self, conn):
        if conn.url.path.startswith("/.well-known/"):
            return None  # the card is public, as at mur's door
        header = conn.headers.get("authorization")
        if header is None:
            raise AuthenticationError("unauthenticated")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token, TOKEN):
            raise AuthenticationError("invalid_token")
        return AuthCredentials(["authenticated"]), SimpleUser("operator")


def refused(_conn, exc):
    return JSONResponse({"error": str(exc)}, status_code=401)


port = sock.getsockname()[1]
card = pb.AgentCard(
    name="echo",
    description="Echoes the task's text.",
    version="1.0.0",
    supported_interfaces=[
        pb.AgentInterface(
            url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC", protocol_version="1.0"
        )
    ],
    capabilities=pb.AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[pb.AgentSkill(id="echo", name="echo", description="Echoes the text.", tags=["echo"])],
)
handler = DefaultRequestHandler(
    agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
)
app = Starlette(
    routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")],
    middleware=[Middleware(AuthenticationMiddleware, backend=Bearer(), on_error=refused)],
)
config = uvicorn.Config(app, log_level="warning", access_log=False)
uvicorn.Server(config).run(sockets=[sock])
