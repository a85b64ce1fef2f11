import { PassThrough, type Writable } from 'node:stream';
import type { CommandIo } from '../../src/commands/io.js';

/** A CommandIo for calling a command in process, its output captured; signals are ignored. */
export function captureIo(env: NodeJS.ProcessEnv = {}, stdout: Writable = new PassThrough()) {
  const out: string[] = [];
  const err: string[] = [];
  const stderr = new PassThrough();
  stdout.on('data', (c: Buffer) => out.push(c.toString()));
  stderr.on('data', (c: Buffer) => err.push(c.toString()));
  const io: CommandIo = { stdout, stderr, env, onSignal: () => {} };
  return { io, stdout: () => out.join(''), stderr: () => err.join('') };
}
