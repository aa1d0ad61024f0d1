// An MCP server written with the TypeScript SDK, for mcpexec's tests: its
// tool "act" performs a side effect (appends a line to the file named by
// SIDE_EFFECT_LOG), then asks the client for input (elicitation/create) and
// rethrows the client's refusal, so that the call's JSON-RPC error is the
// client's own -32602. Its tools "progress_then_fail" and "roots_then_fail"
// perform the side effect, then report progress on the call's token (when
// the client gave one; the log line says whether it did) or ask the client
// for its roots (an answered request), and throw -32602 of their own. Its
// tool "refuse" throws -32602 before doing anything.
//
//   node side-effect-server.mjs          stdio
//   node side-effect-server.mjs --http   streamable HTTP on 127.0.0.1, a
//                                        free port; prints the URL
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema, ElicitResultSchema, ErrorCode, ListRootsResultSchema, ListToolsRequestSchema, McpError,
} from "@modelcontextprotocol/sdk/types.js";

let effects = 0;

function newServer() {
  const server = new Server({ name: "side-effect-server", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: "act", description: "Does something, then asks for confirmation.", inputSchema: { type: "object" } },
      { name: "progress_then_fail", description: "Does something, reports progress, then fails.", inputSchema: { type: "object" } },
      { name: "roots_then_fail", description: "Does something, lists the roots, then fails.", inputSchema: { type: "object" } },
      { name: "refuse", description: "Refuses its arguments.", inputSchema: { type: "object" } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    if (req.params.name === "refuse") {
      throw new McpError(ErrorCode.InvalidParams, "refused before acting");
    }
    effects++;
    appendFileSync(process.env.SIDE_EFFECT_LOG, `side effect #${effects}\n`);
    if (req.params.name === "progress_then_fail") {
      const progressToken = req.params._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: 1, total: 2 } });
      }
      appendFileSync(process.env.SIDE_EFFECT_LOG, `progress ${progressToken !== undefined ? "sent" : "not asked for"}\n`);
      throw new McpError(ErrorCode.InvalidParams, "failed after reporting progress");
    }
    if (req.params.name === "roots_then_fail") {
      await extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema);
      throw new McpError(ErrorCode.InvalidParams, "failed after listing the roots");
    }
    await extra.sendRequest({
      method: "elicitation/create",
      params: { message: "Confirm?", requestedSchema: { type: "object", properties: {} } },
    }, ElicitResultSchema); // the client refuses: this throws its McpError, rethrown as the call's error
    return { content: [{ type: "text", text: "confirmed" }] };
  });
  return server;
}

if (process.argv.includes("--http")) {
  const transports = {};
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const id = req.headers["mcp-session-id"];
    let transport = id && transports[id];
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => { transports[sid] = transport; },
      });
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, "127.0.0.1", () => {
    console.log(`http://127.0.0.1:${http.address().port}/mcp`);
  });
} else {
  await newServer().connect(new StdioServerTransport());
}
