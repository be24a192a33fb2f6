import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detectLanguage, languageFromFilename } from '../../src/core/data/text/index.js';

// News-style sentences (the same story in each language) and everyday short ones.
const SENTENCES: [string, string][] = [
  ['The committee will meet again next week to discuss the budget for the coming year.', 'en'],
  ['He said that it was going to rain, but it did not.', 'en'],
  ['Die Regierung hat am Montag neue Maßnahmen gegen die steigenden Preise angekündigt.', 'de'],
  ['Wir haben das nicht gewusst, aber es ist so.', 'de'],
  ['Le gouvernement a annoncé lundi de nouvelles mesures contre la hausse des prix.', 'fr'],
  ['Merci beaucoup.', 'fr'],
  ['El gobierno anunció el lunes nuevas medidas contra la subida de los precios.', 'es'],
  ['¿Qué pasa?', 'es'],
  ["Il governo ha annunciato lunedì nuove misure contro l'aumento dei prezzi.", 'it'],
  ['Non lo so, ma penso che sia vero.', 'it'],
  ['O governo anunciou na segunda-feira novas medidas contra a alta dos preços.', 'pt'],
  ['Obrigado, tudo bem?', 'pt'],
  ['De regering heeft maandag nieuwe maatregelen aangekondigd tegen de stijgende prijzen.', 'nl'],
  ['Ik weet het niet, maar het is zo.', 'nl'],
  ['Rząd ogłosił w poniedziałek nowe środki przeciwko rosnącym cenom.', 'pl'],
  ['Dziękuję bardzo.', 'pl'],
  ['Hükümet pazartesi günü yükselen fiyatlara karşı yeni önlemler açıkladı.', 'tr'],
  ['Bilmiyorum ama bence bu doğru.', 'tr'],
  ['Vláda v pondělí oznámila nová opatření proti rostoucím cenám.', 'cs'],
  ['Nevím, ale myslím, že je to pravda.', 'cs'],
  ['Hallitus ilmoitti maanantaina uusista toimista hintojen nousua vastaan.', 'fi'],
  ['Regeringen meddelade på måndagen nya åtgärder mot stigande priser.', 'sv'],
  ['Chính phủ đã công bố các biện pháp mới vào thứ Hai.', 'vi'],
  ['Правительство в понедельник объявило о новых мерах против роста цен.', 'ru'],
  ['Уряд у понеділок оголосив нові заходи проти зростання цін.', 'uk'],
  ['Правителството обяви в понеделник нови мерки срещу растящите цени.', 'bg'],
  ['Η κυβέρνηση ανακοίνωσε τη Δευτέρα νέα μέτρα κατά της αύξησης των τιμών.', 'el'],
  ['הממשלה הודיעה ביום שני על צעדים חדשים נגד עליית המחירים.', 'he'],
  ['أعلنت الحكومة يوم الاثنين عن إجراءات جديدة ضد ارتفاع الأسعار.', 'ar'],
  ['دولت روز دوشنبه اقدامات جدیدی علیه افزایش قیمت‌ها اعلام کرد.', 'fa'],
  ['सरकार ने सोमवार को बढ़ती कीमतों के खिलाफ नए उपायों की घोषणा की है।', 'hi'],
  ['รัฐบาลประกาศมาตรการใหม่เพื่อต่อต้านราคาที่สูงขึ้นเมื่อวันจันทร์', 'th'],
  ['정부는 월요일 물가 상승에 대응하는 새로운 조치를 발표했다.', 'ko'],
  ['政府は月曜日、物価上昇に対する新たな対策を発表した。', 'ja'],
  ['政府周一宣布了应对物价上涨的新措施。', 'zh'],
];

test('detection on real sentences in many languages and scripts', () => {
  for (const [text, language] of SENTENCES) {
    const found = detectLanguage(text);
    assert.equal(found.language, language, `${text} -> ${JSON.stringify(found)}`);
    assert.ok(found.confidence > 0 && found.confidence <= 1, `${text}: confidence ${found.confidence}`);
  }
});

test('scripts are reported', () => {
  assert.equal(detectLanguage('Кошка спит.').script, 'Cyrillic');
  assert.equal(detectLanguage('政府は月曜日').script, 'Kana', 'Kana among Han means Japanese');
  assert.equal(detectLanguage('The cat.').script, 'Latin');
  assert.deepEqual(detectLanguage('12345 !!!'), { language: 'en', confidence: 0, script: 'none' });
  assert.equal(detectLanguage('12345', ['de', 'fr']).language, 'de', 'no letters: the first configured language');
});

test('restricted to the configured languages', () => {
  const configured = ['en', 'de', 'fr', 'es', 'it', 'pt', 'nl', 'pl', 'tr', 'cs'];
  for (const [text, language] of SENTENCES.filter(([, l]) => configured.includes(l)))
    assert.equal(detectLanguage(text, configured).language, language, text);
  // Finnish is not configured: the best configured Latin language wins instead.
  assert.ok(configured.includes(detectLanguage(SENTENCES[20][0], configured).language));
  // A Cyrillic text with only uk configured among Cyrillic languages is uk.
  assert.equal(detectLanguage('Кошка спит на диване.', ['uk', 'en']).language, 'uk');
  // No configured language writes Cyrillic: the script's language is kept, with low confidence, so the row can be
  // skipped.
  const ru = detectLanguage('Кошка спит на диване.', ['en', 'de']);
  assert.equal(ru.language, 'ru');
  assert.ok(ru.confidence <= 0.5);
  // Spelt as configured.
  assert.equal(
    detectLanguage('O governo anunciou novas medidas contra a alta dos preços.', ['en', 'pt-BR']).language,
    'pt-BR',
  );
  assert.equal(detectLanguage('The cat sat on the mat.', ['en']).confidence, 1);
});

test('language from file names', () => {
  assert.equal(languageFromFilename('/data/wavs/de_0001.wav'), 'de');
  assert.equal(languageFromFilename('wavs/fr_speaker3_0042.wav'), 'fr');
  assert.equal(languageFromFilename('/data/corpus/fr/0001.wav'), 'fr');
  assert.equal(languageFromFilename('es/wavs/0001.wav'), 'es', 'first folder of a relative path');
  assert.equal(languageFromFilename('/data/wavs/LJ001-0001.wav'), undefined);
  assert.equal(languageFromFilename('/data/wavs/xx_0001.wav'), undefined, 'not a language code');
  assert.equal(languageFromFilename('/home/abc/wavs/take_01.wav'), undefined);
  assert.equal(languageFromFilename('/data/pt-br_0001.wav', ['en', 'pt-BR']), 'pt-BR', 'spelt as configured');
  assert.equal(
    languageFromFilename('/data/my_recording.wav', ['en', 'de']),
    undefined,
    '"my" is a code, but not a configured one',
  );
  assert.equal(languageFromFilename('/data/my_recording.wav'), 'my', 'without candidates any ISO 639-1 code counts');
});
