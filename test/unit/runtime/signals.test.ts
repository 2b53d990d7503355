import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { onStopSignals } from '../../../src/runtime/signals.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

describe('onStopSignals', () => {
  it('the first SIGTERM or SIGINT aborts the stop signal; a second one exits 1 at once; dispose removes the handlers', () => {
    for (const first of ['SIGTERM', 'SIGINT'] as const) {
      const source = new EventEmitter();
      const exits: number[] = [];
      const signals = onStopSignals(silentLogger(), source, (code) => exits.push(code));
      expect(signals.signal.aborted).toBe(false);
      source.emit(first, first);
      expect(signals.signal.aborted).toBe(true);
      expect(exits).toEqual([]);
      source.emit('SIGINT', 'SIGINT');
      expect(exits).toEqual([1]);
      signals.dispose();
      expect(source.listenerCount('SIGTERM') + source.listenerCount('SIGINT')).toBe(0);
    }
  });
});
