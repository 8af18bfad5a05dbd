"""The SDK's version (``protomcp_sdk.__version__``), which the tool process reports in Hello."""

SDK_NAME = "protomcp_sdk"
SDK_VERSION = "0.1.0"
