"""``python -m protomcp_sdk TOOL_FILE``: the tool process the protomcp host starts."""

import sys

from protomcp_sdk.runtime import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
