// The remote MCP server the host fronts for the conformance suite's server scenarios: every
// tool, resource, resource template and prompt those scenarios ask for by name, built on the
// MCP project's TypeScript SDK (the one the suite's own install brings), so a failing scenario
// is the host's answer, not a missing name. Stateful streamable HTTP (a server's question to
// its client, elicitation or sampling, travels on the call's own response stream).
//
// Usage: node upstream.mjs NODE_MODULES   (prints "upstream on PORT" once listening on
// 127.0.0.1, a free port).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(`${process.argv[2]}/`);
const { Server } = require('@modelcontextprotocol/sdk/server/index.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const T = require('@modelcontextprotocol/sdk/types.js');

// A 1x1 PNG and a tiny WAV: what the scenarios check is the type and the MIME type.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const noArgs = { type: 'object', properties: {} };

const tools = {
  test_simple_text: { description: 'Returns simple text content', run: async () => text('This is a simple text response for testing.') },
  test_image_content: { description: 'Returns image content', run: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }) },
  test_audio_content: { description: 'Returns audio content', run: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }) },
  test_embedded_resource: {
    description: 'Returns an embedded resource',
    run: async () => ({ content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }),
  },
  test_multiple_content_types: {
    description: 'Returns text, image and resource content',
    run: async () => ({ content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ] }),
  },
  test_error_handling: {
    description: 'Always returns a tool error',
    run: async () => ({ isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }),
  },
  test_tool_with_progress: {
    description: 'Reports progress 0, 50, 100 of 100',
    run: async (_args, extra) => {
      const token = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
        if (progress < 100) await sleep(50);
      }
      return text(`Progress test completed (token ${token ?? 'none'})`);
    },
  },
  test_tool_with_logging: {
    description: 'Sends three info log messages',
    run: async (_args, extra) => {
      for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'conformance-upstream', data } });
      }
      return text('Logging test completed');
    },
  },
  test_sampling: {
    description: 'Asks the client for an LLM sampling',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    run: async (args, extra) => {
      const answer = await extra.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }], maxTokens: 100 } },
        T.CreateMessageResultSchema,
      );
      return text(`LLM response: ${answer.content?.text ?? JSON.stringify(answer.content)}`);
    },
  },
  test_elicitation: {
    description: 'Asks the user for a username and an email',
    inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    run: async (args, extra) => {
      const answer = await elicit(extra, args.message, {
        type: 'object',
        properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
        required: ['username', 'email'],
      });
      return text(`User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    },
  },
  test_elicitation_sep1034_defaults: {
    description: 'Asks with a default for every primitive type',
    run: async (_args, extra) => {
      const answer = await elicit(extra, 'Please review and update the form fields with defaults', {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
      });
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    },
  },
  test_elicitation_sep1330_enums: {
    description: 'Asks with every enum form',
    run: async (_args, extra) => {
      const answer = await elicit(extra, 'Please select options from the enum fields', {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', description: 'Untitled single-select', enum: ['option1', 'option2', 'option3'] },
          titledSingle: { type: 'string', description: 'Titled single-select', oneOf: [
            { const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }] },
          legacyEnum: { type: 'string', description: 'Legacy titled enum', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', description: 'Untitled multi-select', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: { type: 'array', description: 'Titled multi-select', items: { anyOf: [
            { const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] } },
        },
      });
      return text(`Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`);
    },
  },
  json_schema_2020_12_tool: {
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
    run: async (args) => text(`Received: ${JSON.stringify(args)}`),
  },
  test_reconnection: { description: 'Answers after a short pause (SSE polling)', run: async () => { await sleep(100); return text('Reconnection test completed'); } },
};

function elicit(extra, message, requestedSchema) {
  return extra.sendRequest({ method: 'elicitation/create', params: { message, requestedSchema } }, T.ElicitResultSchema);
}

const resources = [
  { uri: 'test://static-text', name: 'static-text', description: 'A static text resource', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
  { uri: 'test://static-binary', name: 'static-binary', description: 'A static binary resource (PNG)', mimeType: 'image/png', blob: PNG },
  { uri: 'test://watched-resource', name: 'watched-resource', description: 'A resource to subscribe to', mimeType: 'text/plain', text: 'Watched resource content.' },
];
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const prompts = {
  test_simple_prompt: {
    description: 'A simple prompt without arguments',
    get: () => [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  },
  test_prompt_with_arguments: {
    description: 'A prompt with two arguments',
    arguments: [{ name: 'arg1', description: 'First test argument', required: true }, { name: 'arg2', description: 'Second test argument', required: true }],
    get: (a) => [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` } }],
  },
  test_prompt_with_embedded_resource: {
    description: 'A prompt embedding a resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    get: (a) => [
      { role: 'user', content: { type: 'resource', resource: { uri: a.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  },
  test_prompt_with_image: {
    description: 'A prompt with an image',
    get: () => [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  },
};

function build() {
  const server = new Server(
    { name: 'conformance-upstream', version: '1.0.0' },
    { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
  );
  const subscriptions = new Set();
  server.setRequestHandler(T.ListToolsRequestSchema, async () => ({
    tools: Object.entries(tools).map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema ?? noArgs })),
  }));
  server.setRequestHandler(T.CallToolRequestSchema, async (request, extra) => {
    const tool = tools[request.params.name];
    if (!tool) throw new T.McpError(T.ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
    return tool.run(request.params.arguments ?? {}, { ...extra, _meta: request.params._meta });
  });
  server.setRequestHandler(T.ListResourcesRequestSchema, async () => ({
    resources: resources.map(({ uri, name, description, mimeType }) => ({ uri, name, description, mimeType })),
  }));
  server.setRequestHandler(T.ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: 'test://template/{id}/data', name: 'template', description: 'A resource template with an id', mimeType: 'application/json' }],
  }));
  server.setRequestHandler(T.ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const direct = resources.find((r) => r.uri === uri);
    if (direct) {
      const { name: _n, description: _d, ...content } = direct;
      return { contents: [content] };
    }
    const templated = TEMPLATE.exec(uri);
    if (templated) {
      const id = templated[1];
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] };
    }
    throw new T.McpError(-32002, `resource not found: ${uri}`);
  });
  server.setRequestHandler(T.SubscribeRequestSchema, async (request) => { subscriptions.add(request.params.uri); return {}; });
  server.setRequestHandler(T.UnsubscribeRequestSchema, async (request) => { subscriptions.delete(request.params.uri); return {}; });
  server.setRequestHandler(T.ListPromptsRequestSchema, async () => ({
    prompts: Object.entries(prompts).map(([name, p]) => ({ name, description: p.description, arguments: p.arguments })),
  }));
  server.setRequestHandler(T.GetPromptRequestSchema, async (request) => {
    const prompt = prompts[request.params.name];
    if (!prompt) throw new T.McpError(T.ErrorCode.InvalidParams, `unknown prompt ${request.params.name}`);
    return { messages: prompt.get(request.params.arguments ?? {}) };
  });
  server.setRequestHandler(T.CompleteRequestSchema, async () => ({ completion: { values: [], total: 0, hasMore: false } }));
  server.setRequestHandler(T.SetLevelRequestSchema, async () => ({}));
  return server;
}

const sessions = new Map();
http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const id = req.headers['mcp-session-id'];
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      if (id || req.method !== 'POST' || !T.isInitializeRequest(body)) {
        res.writeHead(id ? 404 : 400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: id ? 'unknown session' : 'initialize first' } }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(String(e));
  }
}).listen(0, '127.0.0.1', function () { console.log(`upstream on ${this.address().port}`); });
