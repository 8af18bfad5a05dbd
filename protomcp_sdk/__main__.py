"""``python -m protomcp_sdk TOOL_FILE``: the tool process the protomcp host starts."""

import os
import sys

from protomcp_sdk.runtime.lifeline import die_with_host
from protomcp_sdk.wire.env import ENVELOPE_ENV

die_with_host()  # first, before the (possibly slow) imports

if os.environ.get(ENVELOPE_ENV) == "python":  # before anything imports envelope_pb2
    from protomcp_sdk.wire.purepb import install

    install()

from protomcp_sdk.runtime.process import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
