// The test app on the official MCP Apps SDK: tests/playground/test_apps.py bundles it with esbuild
// into one inline script of the app's HTML.
import { App } from "@modelcontextprotocol/ext-apps";
const $ = (id) => document.getElementById(id);
const app = new App({ name: "sdk-app", version: "1.0.0" }, {});
app.ontoolinput = (params) => { $("input").textContent = JSON.stringify(params.arguments); };
app.ontoolresult = async (result) => {
  $("result").textContent = JSON.stringify(result.structuredContent);
  const answer = await app.callServerTool({ name: "shout", arguments: { word: result.structuredContent.word } });
  $("answer").textContent = answer.content[0].text;
};
app.connect().then(() => { $("host").textContent = "connected to " + app.getHostVersion().name; });
