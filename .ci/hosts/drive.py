#!/usr/bin/env python3
"""Drives interactive Claude Code in a pty: answers the form a tool asks with KEYS.

usage: drive.py LOG SECONDS STEP... -- COMMAND...
Each STEP is WAIT=>KEYS: KEYS (with \\r for Enter, \\x1b[A for Up) are typed once, when
the screen (escape sequences and layout spaces dropped) shows WAIT. Ends when LOG has a
tool_result, or after SECONDS; the screen's whole text is left in /tmp/transcript.txt.
"""
import os
import pty
import re
import select
import sys
import time

log, seconds = sys.argv[1], float(sys.argv[2])
split = sys.argv.index("--")
steps = [s.split("=>", 1) for s in sys.argv[3:split]]
command = sys.argv[split + 1:]

pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(command[0], command)
screen, deadline, transcript = "", time.time() + seconds, []
plain = lambda text: re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]", "", text)
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if ready:
        try:
            data = os.read(fd, 65536).decode("utf-8", "replace")
        except OSError:
            break
        screen += data
        transcript.append(data)
    text = plain(screen)
    for i, (wait, keys) in enumerate(steps):
        if keys is not None and wait in text[-4000:]:
            time.sleep(0.5)
            os.write(fd, keys.encode().decode("unicode_escape").encode())
            print(f"[sent step {i}: {wait!r}]", flush=True)
            steps[i][1] = None
            screen = ""
            break
    if os.path.exists(log) and "tool_result" in open(log).read():
        time.sleep(1)
        break
os.kill(pid, 9)
print(plain(screen)[-3000:])
open("/tmp/transcript.txt", "w").write(plain("".join(transcript)))
