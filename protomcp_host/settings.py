"""RunSettings: what one `protomcp run` or `protomcp dev` was asked to do, typed and frozen.

The CLI builds it (cli/run_options.py from the command's options; cli/serving.py for `protomcp run
FILE...` without options) and the host is built from it (app.Host). Its defaults are the one
copy of the run's defaults (those of its tool processes: processes/settings.py's): the click
options take theirs from here. Light on imports, since
`protomcp run FILE...` builds one before it imports the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from protomcp_host.processes.settings import LaunchSettings, ProcessSettings

if TYPE_CHECKING:
    from protomcp_host.oauth.settings import OAuthServerSettings
    from protomcp_host.peers.settings import PeerSettings
    from protomcp_host.transports.http.server import HttpSettings
    from protomcp_host.upstream.spec import UpstreamSpec
    from protomcp_sdk.wire.rates import Rate


@dataclass(frozen=True)
class DevSettings:
    """What `protomcp dev` does beside serving like run."""

    reload: bool = True  # reload a tool file when it is saved (--no-reload: not)
    watch: tuple[str, ...] = ()  # --watch GLOB: other files whose change reloads
    ui: bool = False  # --ui: also serve the playground
    ui_port: int | None = None  # --ui-port (None: the usual port, or any free one when it is taken)


@dataclass(frozen=True)
class RunSettings:
    """One run's settings. (Not slotted: `RunSettings.page_size` is the default, for click.)"""

    # What to serve
    files: tuple[Path, ...] = ()  # FILES as given: tool files and folders of them
    modules: tuple[str, ...] = ()  # -m MODULE
    plugins: tuple[str, ...] = ()  # --plugin NAME
    upstreams: tuple[UpstreamSpec, ...] = ()  # --upstream, --upstream-token-env, --upstream-prefix
    skills: tuple[Path, ...] = ()  # --skills DIR
    bridge: PeerSettings | None = None  # --agent-id and the other peer options (None: no peers)
    python: str = LaunchSettings.python  # runs the tool files
    # What clients see
    server_name: str | None = None  # --name (None: protomcp)
    instructions: str | None = None  # None: the tool files' docstrings
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    discovery: str = "full"  # or "search": meta-tools find the rest
    page_size: int = 1000  # tools per tools/list page
    schema_registry: Path | None = None  # proto-mcp descriptors by reference, written here
    # Bounds
    call_timeout: float = 300.0  # seconds (0: no limit)
    startup_timeout: float = ProcessSettings.startup_timeout  # (seconds: see ProcessSettings)
    heartbeat_timeout: float = ProcessSettings.heartbeat_timeout
    drain_timeout: float = 5.0  # seconds running calls may take to finish on shutdown
    max_in_flight: int = 1000  # tool calls one session may have running at once
    rate_limits: tuple[tuple[str, Rate], ...] = ()  # --rate-limit: (tool name or "*", its rate)
    processes: int = 1  # tool processes per tool file
    store: str | None = None  # --store URL (None: this host's memory)
    # How clients connect
    http: HttpSettings | None = None  # --transport http or sse (None: stdio)
    auth_token_env: str | None = None  # --auth-token-env: the variable holding the bearer token
    # --oauth-client-id-env, --oauth-client-secret-env: the variables holding the OAuth client
    oauth_client_envs: tuple[str, ...] = ()
    oauth_server: OAuthServerSettings | None = None  # --oauth-provider: the authorization server
    metrics_token_env: str | None = None  # --metrics-token-env: the variable holding /metrics' token
    # What is recorded
    audit_log: str | None = None  # --audit-log FILE, or "-" (None: no audit log)
    audit_arguments: bool = False  # --audit-arguments: the audit log has each call's arguments
    dev: DevSettings | None = None  # None: `protomcp run`
    # What a call prints also goes to the host's stderr (not for `protomcp call`, which shows
    # it once, as the log messages it arrives as)
    echo_requests: bool = True

    @property
    def reload(self) -> bool:
        """dev: tool files are watched and reloaded (blue/green) when they change."""
        return self.dev is not None and self.dev.reload

    def launch_settings(self) -> LaunchSettings:
        """How each tool process is started."""
        return LaunchSettings(self.python, self.hidden_env)

    def process_settings(self) -> ProcessSettings:
        """How each tool file's processes are started and kept serving."""
        return ProcessSettings(
            launch=self.launch_settings(),
            startup_timeout=self.startup_timeout,
            heartbeat_timeout=self.heartbeat_timeout,
            # an outdated process may finish its calls (those running out their --call-timeout too)
            retire_timeout=max(ProcessSettings.retire_timeout, (self.call_timeout or 3600.0) + 5.0),
            standby=self.reload,  # dev: a warm process for fast reloads ...
            wait_for_fix=self.reload,  # ... and a file that fails to load is served as no tools
        )

    @property
    def hidden_env(self) -> frozenset[str]:
        """The variables this run reads secrets from: kept out of the environment of every process
        it starts (tool processes, stdio upstreams, the lookup of -m modules and plugins), which
        run code the host does not control."""
        names = {spec.token_env for spec in self.upstreams if spec.token_env}
        if self.auth_token_env:
            names.add(self.auth_token_env)
        if self.metrics_token_env:
            names.add(self.metrics_token_env)
        if self.http is not None and self.http.workers > 1:
            names.add("PROMETHEUS_MULTIPROC_DIR")  # the workers' metrics folder: not the tools' to write
        names.update(self.oauth_client_envs)
        if self.oauth_server is not None:
            names.update(self.oauth_server.secret_envs)  # --oauth-client-secret-env and the like
        if self.bridge is not None:
            names.update(self.bridge.credentials)  # --bridge-token-env
            if self.bridge.token_env:
                names.add(self.bridge.token_env)  # --peer-token-env
        return frozenset(names)
