// A host program driving `pincer agent` (stream-json, as the Claude Agent SDKs speak
// it), run by the MCP conformance suite as its client command: `node mcp_host.mjs URL`.
//
// It adds the suite's scenario server as `[mcp.servers.conformance]` to the config in
// $PINCER_HOME, sends one message (the fake model then calls the scenario's tool), and
// answers every `can_use_tool`: a question (an MCP server's elicitation, asked of the
// owner) with its first choice, any other call with allow. It prints one JSON line per
// question and one for the result, and exits with `pincer agent`'s exit code.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const url = process.argv[2];
const home = process.env.PINCER_HOME;
const pincer = process.env.PINCER_BIN;
appendFileSync(`${home}/config.toml`, `\n[mcp.servers.conformance]\nurl = "${url}"\n`);

const agent = spawn(
  pincer,
  ['--home', home, 'agent', '--output-format', 'stream-json', '--verbose', '--input-format',
    'stream-json', '--permission-prompt-tool', 'stdio', '--setting-sources='],
  { stdio: ['pipe', 'pipe', 'inherit'] },
);
const closed = new Promise((resolve) => agent.on('close', resolve));
const send = (value) => agent.stdin.write(`${JSON.stringify(value)}\n`);
const print = (value) => console.log(JSON.stringify(value));

send({ type: 'control_request', request_id: 'req_1', request: { subtype: 'initialize', hooks: null } });
send({
  type: 'user', message: { role: 'user', content: 'use the conformance tool' },
  parent_tool_use_id: null, session_id: 'default',
});

for await (const line of createInterface({ input: agent.stdout })) {
  const message = JSON.parse(line);
  if (message.type === 'control_request' && message.request.subtype === 'can_use_tool') {
    const { tool_name: tool, input } = message.request;
    let answer = { behavior: 'allow', updatedInput: input };
    if (tool === 'question') {
      print({ event: 'question', question: input.question, options: input.options });
      answer = { behavior: 'allow', updatedInput: { ...input, answer: input.options[0] } };
    }
    send({
      type: 'control_response',
      response: { subtype: 'success', request_id: message.request_id, response: answer },
    });
  } else if (message.type === 'result') {
    print({ event: 'result', subtype: message.subtype, result: message.result });
    agent.stdin.end();
  }
}
process.exit((await closed) ?? 1);
