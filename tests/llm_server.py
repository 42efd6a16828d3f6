#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for cutune's LLM tests, on loopback only.

usage: llm_server.py SCRIPT PORT_FILE LOG [PROMPTS]
SCRIPT is a JSON list of replies; request i gets reply i (the last one repeats). A reply is an object:
  status       HTTP status (default 200)
  body         the body as a string (default: a Chat Completions reply carrying "text")
  text         the assistant's text of the default body
  bytes        a body of this many 'x' bytes instead (a huge reply)
  delay_s      sleep before answering (a slow server)
  retry_after  a Retry-After header value
  make         a reply computed from the request's kernel.cu (the ```cuda block of the prompt): "diff" a unified
               diff that adds a comment line naming the request after the first line (so no two replies make one
               state), "source" the whole source with that line,
               "stale" a diff against lines the source does not have; with "move" (the MOVE line's name) and
               "gain" (a GAIN after it on the MOVE line, as given: a number or any text)
The server writes its port to PORT_FILE once it listens, and appends one JSON line per request to LOG: path, the
Authorization header and the request body; with PROMPTS, also one JSON line per request to PROMPTS: its number
("n", from 0) and its system and user messages ("system", "user")."""
import http.server
import json
import socketserver
import sys
import time

script = json.load(open(sys.argv[1]))
port_file, log_path = sys.argv[2], sys.argv[3]
prompts_path = sys.argv[4] if len(sys.argv) > 4 else None
count = [0]


def messages(body):
    """The (system, user) messages of a Chat Completions or Responses request body ("" for what is missing)."""
    req = json.loads(body)
    if "messages" in req:
        by_role = {m.get("role"): m.get("content", "") for m in req["messages"]}
        return by_role.get("system", ""), by_role.get("user", "")
    return req.get("instructions", ""), req.get("input", "")


def made(r, body, n):
    """A Chat Completions reply to request n whose text changes the prompt's kernel.cu as r["make"] says."""
    import difflib
    user = messages(body)[1]
    src = user.split("kernel.cu:\n```cuda\n", 1)[1].split("```\n", 1)[0]
    lines = src.splitlines(keepends=True)
    new = lines[:1] + ["// proposed by the scripted model (request %d)\n" % n] + lines[1:]
    move = "MOVE: " + r.get("move", "cache_policy_cg") + (" GAIN: %s" % r["gain"] if "gain" in r else "") + "\n"
    if r["make"] == "diff":
        diff = "".join(difflib.unified_diff(lines, new, "a/kernel.cu", "b/kernel.cu"))
        text = move + "Here is the change.\n```diff\n" + diff + "```\n"
    elif r["make"] == "source":
        text = move + "```cuda\n" + "".join(new) + "```\n"
    else:
        text = move + "```diff\n--- a/kernel.cu\n+++ b/kernel.cu\n@@ -1,2 +1,2 @@\n-no such line\n+other\n" \
                      " nor this\n```\n"
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": len(text) // 4}}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode("utf-8", "replace")
        with open(log_path, "a") as f:
            f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization"), "body": body}) + "\n")
        n = count[0]
        count[0] += 1
        r = script[min(n, len(script) - 1)]
        if prompts_path:
            system, user = messages(body)
            with open(prompts_path, "a") as f:
                f.write(json.dumps({"n": n, "system": system, "user": user}) + "\n")
        time.sleep(r.get("delay_s", 0))
        if "make" in r:
            out = made(r, body, n)
        elif "bytes" in r:
            out = b"x" * r["bytes"]
        elif "body" in r:
            out = r["body"].encode()
        else:
            out = json.dumps({"choices": [{"message": {"role": "assistant", "content": r.get("text", "")}}],
                              "usage": {"prompt_tokens": 11, "completion_tokens": 5}}).encode()
        try:
            self.send_response(r.get("status", 200))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            if "retry_after" in r:
                self.send_header("Retry-After", str(r["retry_after"]))
            self.end_headers()
            self.wfile.write(out)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout, a size limit)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402

os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
