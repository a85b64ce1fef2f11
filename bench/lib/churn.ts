import { Agent, request } from 'node:http';

/**
 * Keep-alive churn for the soak: `clients` loops, each sending GETs over one keep-alive connection
 * that it closes and replaces after `perConnection` requests, pausing `pauseMs` between requests.
 * Runs in the harness (the load CPU) beside wrk's steady connections.
 */
export interface Churn {
  stop(): Promise<{ requests: number; failures: number; connections: number; firstFailure: string | undefined }>;
}

export function startChurn(port: number, path: string, clients: number, perConnection: number, pauseMs: number): Churn {
  let running = true;
  let requests = 0;
  let failures = 0;
  let connections = 0;
  let firstFailure: string | undefined;
  const once = (agent: Agent) => new Promise<void>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent, timeout: 30_000 }, (res) => {
      res.resume();
      res.once('end', () => {
        requests++;
        if ((res.statusCode ?? 0) >= 400) {
          failures++;
          firstFailure ??= `status ${res.statusCode}`;
        }
        resolve();
      });
      res.once('error', () => {
        failures++;
        resolve();
      });
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', (err) => {
      failures++;
      firstFailure ??= err.message;
      resolve();
    });
    req.end();
  });
  const loop = async () => {
    while (running) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      connections++;
      for (let i = 0; i < perConnection && running; i++) {
        await once(agent);
        await new Promise((r) => setTimeout(r, pauseMs));
      }
      agent.destroy();
    }
  };
  const loops = Array.from({ length: clients }, () => loop());
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { requests, failures, connections, firstFailure };
    },
  };
}
