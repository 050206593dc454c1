"""``python -m lockgate_infra.mcp_example --port N``: serve the example MCP server until interrupted."""

from __future__ import annotations

import argparse
import sys
import threading

from lockgate_infra.mcp_example.server import EXAMPLE_TOKEN, McpExample


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--token", default=EXAMPLE_TOKEN, help="the bearer token it accepts ('' for none)")
    parser.add_argument("--json-response", action="store_true", help="answer handshake-era calls as JSON")
    args = parser.parse_args(argv)
    with McpExample(port=args.port, token=args.token or None, json_response=args.json_response) as server:
        print(f"MCP example server at {server.url} (control API under /_example/)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
