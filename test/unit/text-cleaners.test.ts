import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CLEANER_VERSIONS,
  cardinal,
  cleanText,
  cleanerVersion,
  normalizeUnicode,
  ordinal,
  year,
} from '../../src/core/data/text/index.js';

const en = (s: string) => cleanText(s, { cleaners: 'english', unicode_normalization: 'NFC' });
const multi = (s: string, language?: string) =>
  cleanText(s, { cleaners: 'multilingual', unicode_normalization: 'NFC' }, language);
const basic = (s: string) => cleanText(s, { cleaners: 'basic', unicode_normalization: 'NFC' });

function cases(name: string, table: [string, string][]): void {
  describe(name, () => {
    for (const [input, expected] of table) test(input, () => assert.equal(en(input), expected));
  });
}

cases('english: abbreviations are whole words only', [
  ['Dr. Smith lives on Main St.', 'doctor smith lives on main street.'],
  ['The drummer took the drum to the stop on Drury Lane.', 'the drummer took the drum to the stop on drury lane.'],
  ['Adr. and Mrsx. are not abbreviations, nor is Stop.', 'adr. and mrsx. are not abbreviations, nor is stop.'],
  ['St. Louis is far from St. Paul.', 'saint louis is far from saint paul.'],
  ['In St. Petersburg he met Mr. and Mrs. Jones.', 'in saint petersburg he met mister and missus jones.'],
  ['He walked down Bourbon St. to the river.', 'he walked down bourbon street to the river.'],
  ['They live at 42nd St. near the park.', 'they live at forty-second street near the park.'],
  ['Dr Who met Mr Smith at St Paul.', 'doctor who met mister smith at saint paul.'],
  ['the dr said it, and Dr said nothing.', 'the dr said it, and dr said nothing.'],
  ['Capt. Hook and Lt. Dan sailed with Sgt. Pepper.', 'captain hook and lieutenant dan sailed with sergeant pepper.'],
  ['Smith & Co. vs. Jones Ltd., etc.', 'smith and company versus jones limited, et cetera.'],
  ['Room No. 5, not no. 6; I said no.', 'room number five, not number six; i said no.'],
  ['Fruit, e.g. apples, i.e. the red ones.', 'fruit, for example apples, that is the red ones.'],
  ['On Jan. 5 he left; jan. is not a month here.', 'on january five he left; jan. is not a month here.'],
  ['He is 6 ft. tall and Ft. Worth is in Texas.', 'he is six feet tall and fort worth is in texas.'],
  ['It took 20 ms and weighed 3 kg.', 'it took twenty milliseconds and weighed three kilograms.'],
  ['Room 5 Dr. Smith is in; 20 Ms. Jones are not.', 'room five doctor smith is in; twenty miss jones are not.'],
]);

// An abbreviation's period that also ends the sentence stays, so that the sentence still ends: at the end of the
// text, or before a capital after a word that ends a phrase, a month, or a title used as a noun.
cases('english: an abbreviation that ends a sentence keeps its period', [
  ['I saw the Dr. He said hi.', 'i saw the doctor. he said hi.'],
  ['Call the Dr.', 'call the doctor.'],
  ['We live on Main St. It is quiet.', 'we live on main street. it is quiet.'],
  ['He works for Acme Inc. The pay is good.', 'he works for acme incorporated. the pay is good.'],
  ['We met in Jan. The day was cold.', 'we met in january. the day was cold.'],
  ['She said "ask the Dr."', 'she said "ask the doctor."'],
  ['Ask Dr. Smith and Mrs. Jones.', 'ask doctor smith and missus jones.'],
  [
    'We heard the Rev. Martin Luther King at the St. Lawrence.',
    'we heard the reverend martin luther king at the saint lawrence.',
  ],
  ['Sam Jones Jr. and Co. came; Main St. was closed.', 'sam jones junior and company came; main street was closed.'],
]);

cases('english: times of day with a.m. and p.m., telephone numbers', [
  ['Meet me at 3:30pm.', 'meet me at three thirty p m.'],
  ['At 10am, 7 PM and 12:05 a.m. sharp.', 'at ten a m, seven p m and twelve oh five a m sharp.'],
  ['It opens at 9:00 a.m. We wait.', 'it opens at nine a m. we wait.'],
  ['The 2 PMs met at 5 p.m.', 'the two pms met at five p m.'],
  ['Call 555-123-4567 now.', 'call five five five, one two three, four five six seven now.'],
  [
    'Call (555) 123-4567 or 555.123.4567.',
    'call five five five, one two three, four five six seven or five five five, one two three, four five six seven.',
  ],
  ['Ring +44 20 7946 0958 today.', 'ring plus four four, two zero, seven nine four six, zero nine five eight today.'],
  ['Call +1 (212) 555-0100.', 'call plus one, two one two, five five five, zero one zero zero.'],
  ['At 0100 hours, not 1100.', 'at zero one zero zero hours, not eleven hundred.'],
  ['The score was 3-2 in 1990.', 'the score was three-two in nineteen ninety.'],
]);

cases('english: cardinals, negatives and separators', [
  ['He counted 7 ships and 12 boats.', 'he counted seven ships and twelve boats.'],
  [
    'About 1,234 people came, then 1,000,000 more.',
    'about one thousand two hundred thirty-four people came, then one million more.',
  ],
  ['It was -5 degrees, then (-12) at night.', 'it was minus five degrees, then (minus twelve) at night.'],
  ['The score was 3-2 after +4 overtime.', 'the score was three-two after plus four overtime.'],
  ['Agent 007 had a mp3 and a 3D map.', 'agent zero zero seven had a mp three and a three d map.'],
  ['Version 1.2.3 shipped.', 'version one dot two dot three shipped.'],
  ['He was number #1 on the list.', 'he was number number one on the list.'],
]);

cases('english: ordinals', [
  ['We met on the 1st, the 2nd, the 3rd and the 4th.', 'we met on the first, the second, the third and the fourth.'],
  ['It was his 22nd birthday and her 103rd.', 'it was his twenty-second birthday and her one hundred third.'],
  [
    'The 11th, 12th, 13th, 21st, 40th and 1,000th visitors.',
    'the eleventh, twelfth, thirteenth, twenty-first, fortieth and one thousandth visitors.',
  ],
]);

cases('english: decimals and percentages', [
  ['Pi is 3.14 roughly.', 'pi is three point one four roughly.'],
  [
    'Only .5 of it, or 1,234.56 in all.',
    'only point five of it, or one thousand two hundred thirty-four point five six in all.',
  ],
  ['Prices rose 45% and fell -2.5%.', 'prices rose forty-five percent and fell minus two point five percent.'],
  ['Growth was 1999% in a year.', 'growth was one thousand nine hundred ninety-nine percent in a year.'],
]);

cases('english: currency', [
  ['He paid $5 for it.', 'he paid five dollars for it.'],
  [
    'It costs $5.50 now, or $0.99 on sale, or $1.01 with tax.',
    'it costs five dollars, fifty cents now, or ninety-nine cents on sale, or one dollar, one cent with tax.',
  ],
  [
    'A £3 fee, £3.20 for post and €2 for the bag.',
    'a three pounds fee, three pounds, twenty pence for post and two euros for the bag.',
  ],
  [
    'The ticket was 5€ and the loan $2,500.',
    'the ticket was five euros and the loan two thousand five hundred dollars.',
  ],
  ['The deal was worth $3.5 million.', 'the deal was worth three point five million dollars.'],
  ['He owed 5 dollars and 1 dollar more.', 'he owed five dollars and one dollar more.'],
  ['It cost ¥100.', 'it cost one hundred yen.'],
]);

cases('english: years, decades and times', [
  [
    'In 1999, 2005 and 2010 things changed.',
    'in nineteen ninety-nine, two thousand five and twenty ten things changed.',
  ],
  [
    'From 1900 to 1905, and in 1066 and 2000.',
    'from nineteen hundred to nineteen oh five, and in ten sixty-six and two thousand.',
  ],
  ['The 1960s and the \u201980s were loud.', 'the nineteen sixties and the eighties were loud.'],
  [
    'We left at 7:45 and arrived at 12:00, not 7:05.',
    "we left at seven forty-five and arrived at twelve o'clock, not seven oh five.",
  ],
  ['It was 5°C or 41 °F.', 'it was five degrees celsius or forty-one degrees fahrenheit.'],
]);

cases('english: dates and fractions, which the number pass would read group by group', [
  [
    'On 2024-10-03, 12/05/2024 and 25/12/2024.',
    'on october third, twenty twenty-four, december fifth, twenty ' +
      'twenty-four and december twenty-fifth, twenty twenty-four.',
  ],
  [
    'Add 1/2 cup, 1 1/2 spoons, 2 3/4 pints and 5/8 of 1/100.',
    'add one half cup, one and a half spoons, two and ' + 'three quarters pints and five eighths of one one hundredth.',
  ],
  // Not dates or fractions: left for the tokenizer to name, as written.
  [
    '13/13/2024, 24/7, 50/50, 3/2 and 1/2/3',
    'thirteen/thirteen/twenty twenty-four, twenty-four/seven, ' + 'fifty/fifty, three/two and one/two/three',
  ],
]);

test('english: a date with slashes is day first where the language tag names a region that writes it so', () => {
  const c = { cleaners: 'english', unicode_normalization: 'NFC' } as const;
  assert.equal(cleanText('12/05/2024', c, 'en-GB'), 'the twelfth of may, twenty twenty-four');
  assert.equal(cleanText('12/05/2024', c, 'en-us'), 'december fifth, twenty twenty-four');
  assert.equal(cleanText('12/05/2024', c, 'en'), 'december fifth, twenty twenty-four');
  assert.equal(cleanText('5/25/2024', c, 'en_AU'), 'the twenty-fifth of may, twenty twenty-four', 'a day past 12');
  assert.equal(
    cleanText('12/05/2024', { cleaners: 'multilingual', unicode_normalization: 'NFC' }, 'en-IE'),
    'the twelfth of may, twenty twenty-four',
  );
});

cases('english: quotes, dashes, whitespace and case', [
  ['He said \u201chi\u201d \u2014 twice\u2026', 'he said "hi" - twice...'],
  ['It\u2019s   a\ttest,\n  OK?', "it's a test, ok?"],
  ['\u00abQuoted\u00bb and \u2018single\u2019.', '"quoted" and \'single\'.'],
]);

test('number words', () => {
  assert.equal(cardinal('0'), 'zero');
  assert.equal(cardinal('1000001'), 'one million one');
  assert.equal(
    cardinal('999999999999'),
    'nine hundred ninety-nine billion nine hundred ninety-nine million nine hundred ' +
      'ninety-nine thousand nine hundred ninety-nine',
  );
  assert.equal(ordinal('12'), 'twelfth');
  assert.equal(ordinal('40'), 'fortieth');
  assert.equal(ordinal('101'), 'one hundred first');
  assert.equal(year('1905'), 'nineteen oh five');
  assert.equal(year('2021'), 'twenty twenty-one');
  assert.equal(year('1000'), 'one thousand');
  assert.equal(
    en('Serial 1234567890123456789012345678901234567890.').split(' ').length,
    41,
    'beyond decillions, digit by digit',
  );
});

test('english: no digits survive, whatever the grouping', () => {
  for (const s of ['1,2345 and 12,34', '3:61 and 25:00', '1.2.3.4.5', '10.000,5', '٣ and 5']) {
    assert.doesNotMatch(en(s), /[0-9]/, s);
  }
});

test('multilingual: lower-cases every script, folds punctuation, keeps letters, no number expansion', () => {
  assert.equal(multi('  Über  «Straße»  '), 'über "straße"');
  assert.equal(multi('Привет,   МИР — «да»…'), 'привет, мир - "да"...');
  assert.equal(multi('ΟΔΟΣ ΣΟΦΟΣ'), 'οδος σοφος', 'Greek final sigma');
  assert.equal(multi('你好，世界。“引号”！'), '你好,世界."引号"!');
  assert.equal(multi('سلام، خوبی؟'), 'سلام, خوبی?');
  assert.equal(multi('क्या है।'), 'क्या है.');
  assert.equal(multi('ＡＢＣ１２３'), 'abc123', 'full-width forms');
  assert.equal(multi('I have 5 apples, Mr. Smith.'), 'i have 5 apples, mr. smith.');
  assert.equal(multi('İSTANBUL ve IRMAK', 'tr'), 'istanbul ve ırmak', 'Turkish dotted and dotless i');
  assert.equal(multi('IRMAK', 'en'), 'irmak');
  // Zero-width space, soft hyphen and bidi marks vanish; ZWNJ stays (Persian spelling needs it); BEL is a space.
  assert.equal(multi('a\u200bb\u00adc\u200ed\u200ce\u0007f'), 'abcd\u200ce f');
});

test('basic: only whitespace collapsed and trimmed', () => {
  assert.equal(basic('  Keep  Case\t\n12  \u201cquotes\u201d '), 'Keep Case 12 \u201cquotes\u201d');
});

test('unicode normalisation', () => {
  const composed = '\u00e9';
  const decomposed = 'e\u0301';
  assert.equal(normalizeUnicode(decomposed, 'NFC'), composed);
  assert.equal(normalizeUnicode(composed, 'NFD'), decomposed);
  assert.equal(normalizeUnicode('\ufb01', 'NFKC'), 'fi', 'compatibility ligature');
  assert.equal(normalizeUnicode('\ufb01', 'NFC'), '\ufb01');
  assert.equal(normalizeUnicode('\ufb01\u00e9', 'NFKD'), 'fie\u0301');
  assert.equal(normalizeUnicode(decomposed, 'none'), decomposed);
  assert.equal([...cleanText(decomposed, { cleaners: 'basic', unicode_normalization: 'NFC' })].length, 1);
  assert.equal([...cleanText(composed, { cleaners: 'basic', unicode_normalization: 'NFD' })].length, 2);
});

test('cleaner versions name the cleaner and the Unicode version', () => {
  for (const name of ['english', 'multilingual', 'basic'] as const) {
    assert.match(CLEANER_VERSIONS[name], new RegExp(`^${name}@\\d+\\+unicode${process.versions.unicode}$`));
    assert.equal(cleanerVersion(name), CLEANER_VERSIONS[name]);
  }
  assert.equal(new Set(Object.values(CLEANER_VERSIONS)).size, 3);
});
