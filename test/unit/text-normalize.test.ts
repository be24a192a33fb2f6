import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CLEANER_LANGUAGES,
  cleanerClaims,
  cleanText,
  NORMALIZED_LANGUAGES,
  normalizeForLanguage,
} from '../../src/core/data/text/index.js';

const multi = (s: string, language: string) =>
  cleanText(s, { cleaners: 'multilingual', unicode_normalization: 'NFC' }, language);

/** Cases starting with "=" go through normalizeForLanguage (capitals kept), the rest through cleanText. */
function cases(language: string, table: [string, string][]): void {
  describe(`normalize ${language}`, () => {
    for (const [input, expected] of table) {
      if (input.startsWith('='))
        test(input, () => assert.equal(normalizeForLanguage(input.slice(1), language), expected));
      else test(input, () => assert.equal(multi(input, language), expected));
    }
  });
}

cases('de', [
  ['Ich habe 3 Hunde und 25 Katzen', 'ich habe drei hunde und fünfundzwanzig katzen'],
  ['0, 11, 19, 21, 100, 101', 'null, elf, neunzehn, einundzwanzig, hundert, hunderteins'],
  ['1000, 1001 und 1.000.000', 'tausend, tausendeins und eine million'],
  ['2.000.000 und 1.000.000.000', 'zwei millionen und eine milliarde'],
  ['Es sind -5 Grad.', 'es sind minus fünf grad.'],
  ['1.000,5 und 3,14', 'tausend komma fünf und drei komma eins vier'],
  [
    '=Er wurde 1999 geboren, sie 2024.',
    'Er wurde neunzehnhundertneunundneunzig geboren, sie zweitausendvierundzwanzig.',
  ],
  ['=Am 3. Oktober und der 3. Platz', 'Am dritten Oktober und der dritte Platz'],
  ['=der 3te und am 21ten', 'der dritte und am einundzwanzigsten'],
  [
    '=Am 3.10.2024 und 2024-12-01.',
    'Am dritten Oktober zweitausendvierundzwanzig und erster Dezember zweitausendvierundzwanzig.',
  ],
  ['Um 14:30 Uhr, um 8.15 Uhr und um 1 Uhr', 'um vierzehn uhr dreißig, um acht uhr fünfzehn und um ein uhr'],
  ['50 % und 3,5%', 'fünfzig prozent und drei komma fünf prozent'],
  ['3,50 €, €1, $20 und 5 £', 'drei euro und fünfzig cent, ein euro, zwanzig dollar und fünf pfund'],
  ['=z. B. usw. Dann bzw. ca. Nr. 7', 'zum Beispiel und so weiter. Dann beziehungsweise circa Nummer sieben'],
  ['=Dr. Müller und Prof. Weber', 'Doktor Müller und Professor Weber'],
  ['Der Drache sah ca Nrw und Drusw.', 'der drache sah ca nrw und drusw.'],
  ['3Hunde und A4', 'drei hunde und a vier'],
  ['1 Katze und 1 Hund', 'eine katze und ein hund'],
  ['Kein Zahl hier, nur Wörter.', 'kein zahl hier, nur wörter.'],
  ['COVID-19 und 1990-95', 'covid-neunzehn und neunzehnhundertneunzig-fünfundneunzig'],
  [
    'bis zum 24.12. warten, Abschnitt 1.2. lesen',
    'bis zum vierundzwanzigsten dezember warten, abschnitt eins komma zwei. lesen',
  ],
  ['Er wurde 30. Dann kam er.', 'er wurde dreißig. dann kam er.'],
  ['Die 90er und ein 3er', 'die neunziger und ein dreier'],
]);

cases('es', [
  ['Tengo 21 años y 21', 'tengo veintiún años y veintiuno'],
  ['0, 11, 16, 19, 100, 101', 'cero, once, dieciséis, diecinueve, cien, ciento uno'],
  ['1000, 1001 y 1.000.000', 'mil, mil uno y un millón'],
  ['2.000.000, 1.000.000.000 y 21.000', 'dos millones, mil millones y veintiún mil'],
  ['1 casa, 1 perro y 200 personas', 'una casa, un perro y doscientas personas'],
  ['-7 grados', 'menos siete grados'],
  ['1.000,5 y 3,14', 'mil coma cinco y tres coma catorce'],
  ['En 1999 y 2024', 'en mil novecientos noventa y nueve y dos mil veinticuatro'],
  ['el 3.º piso, la 3ª vez, el 1.er día, el 21º', 'el tercer piso, la tercera vez, el primer día, el vigésimo primero'],
  ['el 11º y el 15º', 'el undécimo y el decimoquinto'],
  ['3/10/2024 y 2024-01-15', 'tres de octubre de dos mil veinticuatro y quince de enero de dos mil veinticuatro'],
  ['a las 14:30 o a las 21:00', 'a las catorce y treinta o a las veintiuna en punto'],
  ['50 % y 12,5%', 'cincuenta por ciento y doce coma cinco por ciento'],
  ['5,50 €, 1 £ y 1.000.000 €', 'cinco euros con cincuenta céntimos, una libra y un millón de euros'],
  ['=El Sr. García y la Sra. López, n.º 5, etc.', 'El señor García y la señora López, número cinco, etcétera.'],
  ['=la Dra. Ruiz, núm. 3, pág. 4', 'la doctora Ruiz, número tres, página cuatro'],
  ['Los Srs y la sra llegaron', 'los srs y la sra llegaron'],
  ['Sin números aquí.', 'sin números aquí.'],
  ['mp3 y 3x', 'mp tres y tres x'],
]);

cases('fr', [
  ['1999', 'mille neuf cent quatre-vingt-dix-neuf'],
  ["J'ai 21 ans, 1 fois, 80 ans", "j'ai vingt et un ans, une fois, quatre-vingts ans"],
  [
    '0, 11, 17, 71, 81, 91, 99',
    'zéro, onze, dix-sept, soixante et onze, quatre-vingt-un, quatre-vingt-onze, quatre-vingt-dix-neuf',
  ],
  ['100, 101, 200, 201, 80 000', 'cent, cent un, deux cents, deux cent un, quatre-vingt mille'],
  ['1000, 1001, 1 000 000 et 2 000 000', 'mille, mille un, un million et deux millions'],
  ['10 000 et 1.000,5 et 3,14', 'dix mille et mille virgule cinq et trois virgule quatorze'],
  ['-5 degrés', 'moins cinq degrés'],
  ['le 1er mai, la 1re fois, le 3e, la 2nde', 'le premier mai, la première fois, le troisième, la seconde'],
  ['21e, 80e, 100e, 1000e, 9e, 5e', 'vingt et unième, quatre-vingtième, centième, millième, neuvième, cinquième'],
  ['3/10/2024 et 2024-10-01', 'trois octobre deux mille vingt-quatre et premier octobre deux mille vingt-quatre'],
  ['14h30, 14:00, 1:05 et 21h', 'quatorze heures trente, quatorze heures, une heure cinq et vingt et une heures'],
  ['50 % et 2,5 %', 'cinquante pour cent et deux virgule cinq pour cent'],
  ['5,50 €, 1 000 000 €, 1 £', "cinq euros et cinquante centimes, un million d'euros, une livre"],
  ['=M. Dupont, Mme Martin, le Dr Roux, etc.', 'Monsieur Dupont, Madame Martin, le Docteur Roux, et cetera.'],
  ['=c.-à-d. env. 3, n° 5', "c'est-à-dire environ trois, numéro cinq"],
  ['=La lettre M. est Mmes et Mmeh', 'La lettre M. est Mesdames et Mmeh'],
  ['Pas de chiffres ici.', 'pas de chiffres ici.'],
]);

cases('it', [
  ['1999 e 2024', 'millenovecentonovantanove e duemilaventiquattro'],
  ['0, 11, 17, 21, 23, 28', 'zero, undici, diciassette, ventuno, ventitré, ventotto'],
  ['100, 101, 108, 180', 'cento, centouno, centotto, centottanta'],
  ['1000, 1001, 21000 e 3.023', 'mille, milleuno, ventunmila e tremilaventitré'],
  ['1.000.000, 2.000.000 e 1.000.000.000', 'un milione, due milioni e un miliardo'],
  ['-3 gradi', 'meno tre gradi'],
  ['1.000,5 e 3,14', 'mille virgola cinque e tre virgola quattordici'],
  ['3º, la 3ª, 21º, 11º, 23º, 26º', 'terzo, la terza, ventunesimo, undicesimo, ventitreesimo, ventiseiesimo'],
  ['100º e 1000º', 'centesimo e millesimo'],
  ['3/10/2024 e 2024-10-01', 'tre ottobre duemilaventiquattro e primo ottobre duemilaventiquattro'],
  ['alle 14:30 e alle 9:00', 'alle quattordici e trenta e alle nove'],
  ['50% e 2,5 %', 'cinquanta per cento e due virgola cinque per cento'],
  ['5,50 €, 1.000.000 € e 1 £', 'cinque euro e cinquanta centesimi, un milione di euro e una sterlina'],
  ['1 casa, 1 libro, 1 studente, 1 e 2', 'una casa, un libro, uno studente, uno e due'],
  [
    '=Il Sig. Rossi, la Sig.ra Bianchi, ecc. Poi n. 5, ad es. ca. 3',
    'Il signor Rossi, la signora Bianchi, eccetera. Poi numero cinque, ad esempio circa tre',
  ],
  ['=Il n. è ignoto, Dott.ssa Verdi', 'Il n. è ignoto, dottoressa Verdi'],
  ['Niente numeri qui.', 'niente numeri qui.'],
]);

cases('pt', [
  ['1999 e 2024', 'mil novecentos e noventa e nove e dois mil e vinte e quatro'],
  ['0, 11, 16, 17, 19, 21', 'zero, onze, dezesseis, dezessete, dezenove, vinte e um'],
  ['100, 101, 1000, 1001, 1500, 1230', 'cem, cento e um, mil, mil e um, mil e quinhentos, mil duzentos e trinta'],
  ['1.000.000, 1.200.000 e 2.000.000.000', 'um milhão, um milhão e duzentos mil e dois bilhões'],
  [
    '2 casas, 1 casa, 200 pessoas, 2.000 pessoas, 2 dias',
    'duas casas, uma casa, duzentas pessoas, duas mil pessoas, dois dias',
  ],
  ['-3 graus', 'menos três graus'],
  ['1.000,5 e 3,14', 'mil vírgula cinco e três vírgula catorze'],
  ['3º, 3ª, 21º, 11º, 100º', 'terceiro, terceira, vigésimo primeiro, décimo primeiro, centésimo'],
  [
    '3/10/2024 e 2024-10-01',
    'três de outubro de dois mil e vinte e quatro e primeiro de outubro de dois mil e vinte e quatro',
  ],
  ['às 14h30, às 14h e à 1:00', 'às catorze e trinta, às catorze horas e à uma hora'],
  ['50% e 2,5 %', 'cinquenta por cento e dois vírgula cinco por cento'],
  ['R$ 5,50, 5 € e 1.000.000 €', 'cinco reais e cinquenta centavos, cinco euros e um milhão de euros'],
  ['=O Sr. Silva e a Dra. Souza, nº 5, etc.', 'O senhor Silva e a doutora Souza, número cinco, et cetera.'],
  ['O Srx e a Av', 'o srx e a av'],
  ['Sem números aqui.', 'sem números aqui.'],
]);

describe('normalize pt-PT', () => {
  test('European spelling and long scale', () => {
    assert.equal(
      multi('16, 19, 1.000.000.000 e 5,50 €', 'pt-PT'),
      'dezasseis, dezanove, mil milhões e cinco euros e cinquenta cêntimos',
    );
  });
});

cases('nl', [
  ['1999 en 2024', 'negentienhonderdnegenennegentig en tweeduizend vierentwintig'],
  ['0, 1, 11, 21, 22, 23', 'nul, één, elf, eenentwintig, tweeëntwintig, drieëntwintig'],
  ['100, 101, 121, 1000, 1001', 'honderd, honderdeen, honderdeenentwintig, duizend, duizend een'],
  ['1.000.000, 2.000.000 en 1.000.000.000', 'één miljoen, twee miljoen en één miljard'],
  ['-3 graden', 'min drie graden'],
  ['1.000,5 en 3,14', 'duizend komma vijf en drie komma één vier'],
  ['3e, 3de, 1ste, 8ste, 20ste, 21ste', 'derde, derde, eerste, achtste, twintigste, eenentwintigste'],
  ['100ste, 102de, 1000ste', 'honderdste, honderdtweede, duizendste'],
  [
    '3-10-2024, 3/10/2024 en 2024-10-01',
    'drie oktober tweeduizend vierentwintig, drie oktober tweeduizend vierentwintig en ' +
      'één oktober tweeduizend vierentwintig',
  ],
  ['om 14:30 en 14:00', 'om veertien uur dertig en veertien uur'],
  ['50% en 2,5 %', 'vijftig procent en twee komma vijf procent'],
  ['5,50 €, € 1 en 1.000.000 €', 'vijf euro en vijftig cent, één euro en één miljoen euro'],
  ['=Dhr. Jansen, bijv. nr. 5, enz. Maar bv', 'De heer Jansen, bijvoorbeeld nummer vijf, enzovoort. Maar bv'],
  ['=d.w.z. ca. 3 blz.', 'dat wil zeggen circa drie bladzijde'],
  ['Geen cijfers hier.', 'geen cijfers hier.'],
]);

cases('en', [
  ['I have 5 apples, Mr. Smith.', 'i have five apples, mister smith.'],
  ['On 2024-10-03 at 3:30', 'on october third, twenty twenty-four at three thirty'],
  ['$5.50 and 50% and the 21st', 'five dollars, fifty cents and fifty percent and the twenty-first'],
  ['1,000,000 and -5 and 1999', 'one million and minus five and nineteen ninety-nine'],
  ['Tom & Jerry', 'tom and jerry'],
  ['0, 11, 19, 21, 100, 101', 'zero, eleven, nineteen, twenty-one, one hundred, one hundred one'],
  ['1000, 1001 and 1,000,000', 'one thousand, one thousand one and one million'],
  ['It was 1.5 or 3.14', 'it was one point five or three point one four'],
  ['the 1st, 2nd, 3rd and 11th', 'the first, second, third and eleventh'],
  ['In 2005 and 2010', 'in two thousand five and twenty ten'],
  ['Dated 1999-12-31.', 'dated december thirty-first, nineteen ninety-nine.'],
  ['at 14:00', "at fourteen o'clock"],
  ['£12.50 and €1', 'twelve pounds, fifty pence and one euro'],
  ['Dr. Jones on Main St.', 'doctor jones on main street.'],
  ['e.g. the drum', 'for example the drum'],
  ['No numbers here.', 'no numbers here.'],
  ['mp3 and 3x', 'mp three and three x'],
  ['Drury Lane, Adr. and Stop', 'drury lane, adr. and stop'],
  ['the 1990s', 'the nineteen nineties'],
  ['=Dr. Who', 'doctor Who'],
]);

test('the language tag: primary subtag, any case; unknown languages are left as written', () => {
  assert.equal(multi('3 Hunde', 'DE-at'), 'drei hunde');
  assert.equal(multi('3 Hunde', 'de_CH'), 'drei hunde');
  assert.equal(normalizeForLanguage('3 kedi, Dr. Ali', 'tr'), '3 kedi, Dr. Ali');
  assert.equal(multi('3 Kedi', 'tr'), '3 kedi');
  assert.equal(multi('I have 5 apples, Mr. Smith.'), 'i have 5 apples, mr. smith.', 'no language: as before');
});

test('every claimed language leaves no ASCII digit in a sentence full of number formats', () => {
  const sentence =
    'Am 2024-10-03 um 14:30 kostet Nr. 7 genau 1.234,56 € (-5 %), $3, £12.50, 3.10.2024, 3/10/2024, ' +
    '3-10-2024, 1er, 2e, 3º, 4ª, 5.º, 6te, 7. Platz, 8de, 1999, 10 000, 1,000,000.5, 0,001, 007, mp3, 1.2.3, ' +
    '14h30, 9 Uhr, 12345678901234567890123456789012345678901234567890 und 3Hunde, COVID-19, 1990-95, 2:1.';
  for (const language of NORMALIZED_LANGUAGES) {
    assert.doesNotMatch(multi(sentence, language), /[0-9]/, language);
  }
});

test('long rows stay linear', () => {
  const rows = ['1'.repeat(10_000), '1.'.repeat(5000), '1,'.repeat(5000), '123 '.repeat(2500), 'z.'.repeat(5000)];
  for (const language of NORMALIZED_LANGUAGES) {
    for (const row of rows) {
      const t = performance.now();
      const out = normalizeForLanguage(row, language);
      assert.ok(performance.now() - t < 500, `${language}: ${row.slice(0, 8)}...`);
      assert.doesNotMatch(out, /[0-9]/);
    }
  }
});

test('cleaner languages and claims', () => {
  assert.deepEqual([...NORMALIZED_LANGUAGES], ['de', 'en', 'es', 'fr', 'it', 'nl', 'pt']);
  assert.deepEqual(CLEANER_LANGUAGES.english, ['en']);
  assert.equal(CLEANER_LANGUAGES.multilingual, NORMALIZED_LANGUAGES);
  assert.equal(CLEANER_LANGUAGES.basic, 'any');
  assert.ok(cleanerClaims('multilingual', 'pt-BR'));
  assert.ok(cleanerClaims('multilingual', 'DE'));
  assert.ok(!cleanerClaims('multilingual', 'tr'));
  assert.ok(cleanerClaims('english', 'en-GB'));
  assert.ok(!cleanerClaims('english', 'de'));
  assert.ok(cleanerClaims('basic', 'zh'));
});
