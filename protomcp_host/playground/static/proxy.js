// The MCP Apps sandbox proxy (io.modelcontextprotocol/ui, 2026-01-26): framed by the playground
// page on another origin, it writes the app's HTML into an inner frame (which inherits this
// page's CSP header: the app's declared one) and relays every message between the page and the
// app, except the ui/notifications/sandbox-* ones, which are between the page and this proxy.
"use strict";
(() => {
  const HOSTS = document.documentElement.dataset.hosts.split(" ");
  const READY = "ui/notifications/sandbox-proxy-ready";
  const RESOURCE = "ui/notifications/sandbox-resource-ready";
  if (window.self === window.top) throw new Error("the app sandbox runs only inside the playground page");
  // The page frames this with referrerpolicy=origin: the referrer is its origin, never its URL.
  const host = document.referrer ? new URL(document.referrer).origin : "";
  if (!HOSTS.includes(host)) throw new Error("the app sandbox runs only inside the playground page");
  const OWN = window.location.origin;

  const inner = document.createElement("iframe");
  inner.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  inner.style.cssText = "display:block;width:100%;height:100vh;border:0";
  document.body.appendChild(inner);
  let loaded = false;

  function allow(permissions) {
    const features = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
    return Object.keys(features).filter((k) => permissions && permissions[k]).map((k) => features[k]).join("; ");
  }

  window.addEventListener("message", (event) => {
    const data = event.data;
    if (event.source === window.parent) {
      if (event.origin !== host) return;
      const method = data && typeof data === "object" ? data.method : undefined;
      if (method === RESOURCE) {
        if (loaded) return;  // one app per proxy
        loaded = true;
        const params = data.params || {};
        const features = allow(params.permissions);
        if (features) inner.setAttribute("allow", features);
        const doc = inner.contentDocument;
        doc.open();
        doc.write(String(params.html));
        doc.close();
      } else if (typeof method !== "string" || !method.startsWith("ui/notifications/sandbox-")) {
        if (inner.contentWindow) inner.contentWindow.postMessage(data, OWN);
      }
    } else if (event.source === inner.contentWindow && event.origin === OWN) {
      window.parent.postMessage(data, host);
    }
  });
  window.parent.postMessage({ jsonrpc: "2.0", method: READY, params: {} }, host);
})();
