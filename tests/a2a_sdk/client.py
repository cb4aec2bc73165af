"""Drives a mur door with the official Python A2A SDK (a2a-sdk) and prints what it
saw as one JSON object. The bearer token arrives on stdin, never on the command line.

Usage: python client.py <door-url>   (token on stdin)
"""

import asyncio
import json
import sys

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict


def message(mid: str, text: str) -> pb.Message:
    return pb.Message(message_id=mid, role=pb.ROLE_USER, parts=[pb.Part(text=text)])


async def main() -> None:
    url = sys.argv[1]
    token = sys.stdin.readline().strip()
    out = {}
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        for streaming in (False, True):
            client = await create_client(
                url, ClientConfig(streaming=streaming, httpx_client=http)
            )
            req = pb.SendMessageRequest(message=message(f"py-{streaming}", "from python"))
            events = [MessageToDict(e) async for e in client.send_message(req)]
            out["stream" if streaming else "send"] = events
        task_id = out["send"][0]["task"]["id"]
        task = await client.get_task(pb.GetTaskRequest(id=task_id))
        out["get"] = MessageToDict(task)
        listed = await client.list_tasks(pb.ListTasksRequest(page_size=10))
        out["list"] = MessageToDict(listed)
        try:
            await client.get_task(pb.GetTaskRequest(id="tsk_missing"))
            out["missing"] = "no error"
        except Exception as e:  # the SDK's TaskNotFound error
            out["missing"] = type(e).__name__ + ": " + str(e)
        try:
            await client.cancel_task(pb.CancelTaskRequest(id=task_id))
            out["cancel_done"] = "no error"
        except Exception as e:
            out["cancel_done"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))


asyncio.run(main())
