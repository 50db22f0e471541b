// An A2A echo agent on @a2a-js/sdk: the peer heddle's a2a grant is tested
// against. It listens on 127.0.0.1:$PORT (0: any free port) and prints
// "listening http://127.0.0.1:<port>" once it accepts connections.
//
//   "hello"        → a Message "echo: hello"
//   "task: hello"  → a completed Task whose artifact is "echo: hello"
//   "slow: hello"  → a working Task, completed 300 ms later (poll GetTask)
//
// With ECHO_TOKEN set, every request must carry "Authorization: Bearer $ECHO_TOKEN".
import { randomUUID } from 'node:crypto';
import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const text = (value) => ({ content: { $case: 'text', value } });
const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
const answer = (value) => ({ artifactId: randomUUID(), name: 'answer', description: '', parts: [text(value)], metadata: undefined, extensions: [] });

const store = new InMemoryTaskStore();
const executor = {
  async execute(ctx, bus) {
    const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    const [, mode, rest] = /^(task|slow): (.*)$/s.exec(input) ?? [, '', input];
    const task = { id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [], metadata: undefined };
    if (mode === '') {
      bus.publish(AgentEvent.message({ messageId: randomUUID(), contextId: ctx.contextId, taskId: '', role: Role.ROLE_AGENT,
        parts: [text(`echo: ${rest}`)], metadata: undefined, extensions: [], referenceTaskIds: [] }));
    } else if (mode === 'task') {
      bus.publish(AgentEvent.task({ ...task, status: status(TaskState.TASK_STATE_COMPLETED), artifacts: [answer(`echo: ${rest}`)] }));
    } else {
      bus.publish(AgentEvent.task({ ...task, status: status(TaskState.TASK_STATE_WORKING) }));
      setTimeout(() => store.save({ ...task, status: status(TaskState.TASK_STATE_COMPLETED), artifacts: [answer(`echo: ${rest}`)] }, ctx.context), 300);
    }
    bus.finished();
  },
  async cancelTask() {},
};

const port = Number(process.env.PORT ?? 0);
const app = express();
app.use((req, res, next) => (!process.env.ECHO_TOKEN || req.get('authorization') === `Bearer ${process.env.ECHO_TOKEN}`
  ? next() : res.status(401).json({ error: 'unauthorized' })));
const server = app.listen(port, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = { name: 'echo', description: 'Echoes the message it is sent.', version: '1.0.0',
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'echo', description: 'Echoes text', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    securitySchemes: {}, securityRequirements: [], signatures: [] };
  const handler = new DefaultRequestHandler(card, store, executor);
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`listening ${base}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
