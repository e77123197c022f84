#!/usr/bin/env node
// Drives an agentry agent over AG-UI with the official client (@ag-ui/client
// HttpAgent), as a frontend would. Prints ONE JSON object on stdout with what
// it saw; exit code 1 with a message on stderr on an error.
//
//   node npm/web/drive-agui.mjs URL KEY answer "QUESTION"
//     one run: {"types": [event types in order], "toolCalls": [{id, name, args}],
//               "results": [{toolCallId, content}], "text": "...", "result": RUN_FINISHED.result}
//   node npm/web/drive-agui.mjs URL KEY approval
//     a run that stops on an interrupt, resumed approved; then another on a
//     new thread, resumed denied: {"first": RUN, "approved": RUN, "second": RUN, "denied": RUN}
//     where RUN also has "interrupts" (the RUN_FINISHED interrupt outcome, if any).

import { HttpAgent } from '@ag-ui/client';

const [url, key, scenario, question] = process.argv.slice(2);
if (!url || !key || !scenario) {
  console.error('usage: drive-agui.mjs URL KEY answer QUESTION | approval');
  process.exit(2);
}

function agentFor(threadId, text) {
  return new HttpAgent({
    url,
    threadId,
    headers: { Authorization: `Bearer ${key}` },
    initialMessages: [{ id: `u-${threadId}`, role: 'user', content: text }],
  });
}

async function run(agent, parameters) {
  const seen = { types: [], toolCalls: [], results: [], text: '', result: null, interrupts: [], error: null };
  const args = {};
  await agent.runAgent(parameters, {
    onEvent: ({ event }) => {
      seen.types.push(event.type);
      switch (event.type) {
        case 'TEXT_MESSAGE_CONTENT': seen.text += event.delta; break;
        case 'TOOL_CALL_START': args[event.toolCallId] = { id: event.toolCallId, name: event.toolCallName, args: '' }; break;
        case 'TOOL_CALL_ARGS': args[event.toolCallId].args += event.delta; break;
        case 'TOOL_CALL_END': seen.toolCalls.push(args[event.toolCallId]); break;
        case 'TOOL_CALL_RESULT': seen.results.push({ toolCallId: event.toolCallId, content: event.content }); break;
        case 'RUN_FINISHED':
          seen.result = event.result ?? null;
          if (event.outcome?.type === 'interrupt') seen.interrupts = event.outcome.interrupts;
          break;
        case 'RUN_ERROR': seen.error = { message: event.message, code: event.code }; break;
        default: break;
      }
    },
  });
  return seen;
}

try {
  if (scenario === 'answer') {
    const agent = agentFor('t-answer', question);
    console.log(JSON.stringify(await run(agent, { runId: 'r-1' })));
  } else if (scenario === 'approval') {
    const out = {};
    const first = agentFor('t-approve', 'Delete a.txt');
    out.first = await run(first, { runId: 'r-1' });
    const open = out.first.interrupts.map((i) => ({ interruptId: i.id, status: 'resolved', payload: { approved: true } }));
    out.approved = await run(first, { runId: 'r-2', resume: open });
    const second = agentFor('t-deny', 'Delete b.txt');
    out.second = await run(second, { runId: 'r-3' });
    const denied = out.second.interrupts.map((i) => ({ interruptId: i.id, status: 'resolved', payload: { approved: false, reason: 'not now' } }));
    out.denied = await run(second, { runId: 'r-4', resume: denied });
    console.log(JSON.stringify(out));
  } else {
    throw new Error(`unknown scenario ${scenario}`);
  }
} catch (error) {
  console.error(String(error?.stack ?? error));
  process.exit(1);
}
