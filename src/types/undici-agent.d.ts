// undici's Agent module on its own (see src/providers/upstream-client.ts for why it is imported by path):
// the same class as undici's exported `Agent`, typed by undici's own declarations.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';

  const AgentClass: typeof Agent;
  export default AgentClass;
}
