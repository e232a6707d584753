package whispertokenizer

// languages lists whisper's language codes in the order of their tokens (tokenizer.py's
// LANGUAGES); models with 99 languages use the first 99, large-v3 and turbo all 100.
var languages = [...]struct{ code, name string }{
	{"en", "english"}, {"zh", "chinese"}, {"de", "german"}, {"es", "spanish"},
	{"ru", "russian"}, {"ko", "korean"}, {"fr", "french"}, {"ja", "japanese"},
	{"pt", "portuguese"}, {"tr", "turkish"}, {"pl", "polish"}, {"ca", "catalan"},
	{"nl", "dutch"}, {"ar", "arabic"}, {"sv", "swedish"}, {"it", "italian"},
	{"id", "indonesian"}, {"hi", "hindi"}, {"fi", "finnish"}, {"vi", "vietnamese"},
	{"he", "hebrew"}, {"uk", "ukrainian"}, {"el", "greek"}, {"ms", "malay"},
	{"cs", "czech"}, {"ro", "romanian"}, {"da", "danish"}, {"hu", "hungarian"},
	{"ta", "tamil"}, {"no", "norwegian"}, {"th", "thai"}, {"ur", "urdu"},
	{"hr", "croatian"}, {"bg", "bulgarian"}, {"lt", "lithuanian"}, {"la", "latin"},
	{"mi", "maori"}, {"ml", "malayalam"}, {"cy", "welsh"}, {"sk", "slovak"},
	{"te", "telugu"}, {"fa", "persian"}, {"lv", "latvian"}, {"bn", "bengali"},
	{"sr", "serbian"}, {"az", "azerbaijani"}, {"sl", "slovenian"}, {"kn", "kannada"},
	{"et", "estonian"}, {"mk", "macedonian"}, {"br", "breton"}, {"eu", "basque"},
	{"is", "icelandic"}, {"hy", "armenian"}, {"ne", "nepali"}, {"mn", "mongolian"},
	{"bs", "bosnian"}, {"kk", "kazakh"}, {"sq", "albanian"}, {"sw", "swahili"},
	{"gl", "galician"}, {"mr", "marathi"}, {"pa", "punjabi"}, {"si", "sinhala"},
	{"km", "khmer"}, {"sn", "shona"}, {"yo", "yoruba"}, {"so", "somali"},
	{"af", "afrikaans"}, {"oc", "occitan"}, {"ka", "georgian"}, {"be", "belarusian"},
	{"tg", "tajik"}, {"sd", "sindhi"}, {"gu", "gujarati"}, {"am", "amharic"},
	{"yi", "yiddish"}, {"lo", "lao"}, {"uz", "uzbek"}, {"fo", "faroese"},
	{"ht", "haitian creole"}, {"ps", "pashto"}, {"tk", "turkmen"}, {"nn", "nynorsk"},
	{"mt", "maltese"}, {"sa", "sanskrit"}, {"lb", "luxembourgish"}, {"my", "myanmar"},
	{"bo", "tibetan"}, {"tl", "tagalog"}, {"mg", "malagasy"}, {"as", "assamese"},
	{"tt", "tatar"}, {"haw", "hawaiian"}, {"ln", "lingala"}, {"ha", "hausa"},
	{"ba", "bashkir"}, {"jw", "javanese"}, {"su", "sundanese"}, {"yue", "cantonese"},
}

// languageAliases are the extra names tokenizer.py's TO_LANGUAGE_CODE accepts.
var languageAliases = map[string]string{
	"burmese": "my", "valencian": "ca", "flemish": "nl", "haitian": "ht",
	"letzeburgesch": "lb", "pushto": "ps", "panjabi": "pa", "moldavian": "ro",
	"moldovan": "ro", "sinhalese": "si", "castilian": "es", "mandarin": "zh",
}

// MaxLanguages is the number of languages the largest whisper vocabulary (large-v3) has.
const MaxLanguages = len(languages)

// LanguageName is whisper's lower-case English name of a language code ("en": "english"),
// the form OpenAI's verbose_json reports.
func LanguageName(code string) (string, bool) {
	for _, e := range languages {
		if e.code == code {
			return e.name, true
		}
	}
	return "", false
}
