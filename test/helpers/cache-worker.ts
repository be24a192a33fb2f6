// A worker of the cache concurrency test (test/e2e/cache-cli.test.ts): opens the feature cache named
// by argv[2] `rounds` times, as a writer (`w`: looks up, writes one text entry a lookup, closes, which
// flushes the lookup counters) or as a reader (`r`: opens read-only and looks up), and prints `ok`
// or the error's code and message on one line.
import { FeatureCache } from '../../src/core/cache/cache.js';
import { toXttsError } from '../../src/core/cli/command.js';

const [path, mode, name] = process.argv.slice(2);
const rounds = 20;
const lookups = 40;
try {
  for (let round = 0; round < rounds; round++) {
    const cache = mode === 'r' ? FeatureCache.openReadonly(path) : FeatureCache.open(path);
    for (let i = 0; i < lookups; i++) {
      cache.getText(`${name}-${i}`);
      if (mode === 'w') cache.putMany({ texts: [{ key: `${name}-${round}-${i}`, cleaned: 'x'.repeat(1000) }] });
    }
    cache.close();
  }
  console.log('ok');
} catch (e) {
  const xe = toXttsError(e);
  console.log(`${xe.code} ${xe.message}`);
}
