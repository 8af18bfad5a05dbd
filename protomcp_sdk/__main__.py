"""``python -m protomcp_sdk TOOL_FILE``: the tool process the protomcp host starts."""

import sys

from protomcp_sdk.runtime.lifeline import die_with_host

die_with_host()  # first, before the (possibly slow) imports

from protomcp_sdk.runtime.process import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
