// The progress bar on a terminal: a rate a person can read at any speed, and the ETA the trainer's log line gives.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProgressLine, rateText } from '../../src/core/render/progress.js';

function terminal(): { stream: NodeJS.WriteStream; text: () => string } {
  const parts: string[] = [];
  const stream = { isTTY: true, write: (s: string) => parts.push(s) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, text: () => parts.join('') };
}

test('rateText: whole or one-decimal rates, and below one a second the seconds each takes', () => {
  assert.equal(rateText(42.4, 'steps'), '42 steps/s');
  assert.equal(rateText(2.46, 'steps'), '2.5 steps/s');
  assert.equal(rateText(1 / 4.3, 'steps'), '4.3 s/step');
  assert.equal(rateText(0.5, 'clips'), '2.0 s/clip');
  assert.equal(rateText(0, 'rows'), '– rows/s');
});

test("the bar's ETA is the mean rate's until the trainer gives its step time, then that one's", () => {
  const t = terminal();
  const bar = new ProgressLine('train', 'steps', t.stream);
  bar.update(2, 10, 8000); // 4 s a step since the start: 8 left, 32 s
  assert.match(t.text(), /\[#####\.+\] 2\/10 4\.0 s\/step, ETA 32 s/);
  bar.clear();
  bar.update(3, 10, 9000, 2.5); // the log line said 2500 ms/step: 7 left, 17.5 s
  assert.match(t.text(), /3\/10 2\.5 s\/step, ETA 18 s/);
  bar.clear();
  bar.update(4, 100, 9000, 0.05);
  assert.match(t.text(), /4\/100 20 steps\/s, ETA 5 s/);
  bar.clear();
  bar.update(5, 1000, 9000, 0.5);
  assert.match(t.text(), /5\/1000 2\.0 steps\/s, ETA 8 min 18 s/);
});
