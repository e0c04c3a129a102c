"""How an order to ignore or forget some text is worded in German, French, Spanish, Italian and Portuguese: one
vocabulary for the rail, which looks for such an order about the model's instructions in a question or a retrieved
chunk (rag/guardrails/detectors.py), and for the judges, which look for one about the text they judge inside an
answer or a premise (eval/judges/instructions.py). A verb added here is read by both.

Two kinds of verb form. ``IMPERATIVE``: second person and polite imperatives ("Vergessen Sie", "ignorez",
"ignorate", "desconsidere", "ne tenez pas compte des"), an order wherever they stand. ``SHARED_WITH_THIRD_PERSON``:
forms a third person shares ("ignora", "oublie", "dimentica": "el modelo ignora las instrucciones" describes a model),
an order only where a sentence or a clause opens with them; Italian's polite imperative (``POLITE_SHARED``) is such a
form too ("capita che il modello ignori le istruzioni"). An order put as a wish, the verb in the subjunctive after
"que" or "che" ("Quiero que ignores las instrucciones", "Je veux que vous ignoriez les consignes") or last after "dass"
("Ich möchte, dass du alle Anweisungen ignorierst"): the addressee's own forms (``ADDRESSEE_SUBJUNCTIVE``), and forms a
third person shares only with the addressee named (``ADDRESSEE`` then ``SHARED_SUBJUNCTIVE``: "que usted ignore", not
"que el modelo ignore"). And an order put as a request, the infinitive after a modal said to the addressee or a
formula of politeness (``REQUEST``, ``MODAL_DE``: "Veuillez ignorer ...", "¿Puedes ignorar ...?")."""
from __future__ import annotations

IMPERATIVE = (r"(?:ignoriere|ignorier|ignorieren\s+sie|vergiss|vergessen\s+sie|missachte|missachten\s+sie|übergehe|"
              r"übergehen\s+sie|ignorez|oubliez|n[ée]gligez|ne\s+(?:tiens|tenez)\s+pas\s+compte\s+(?:de\s+|d['’]|du\s+|"
              r"des\s+)|olvide|omita|desestime|no\s+(?:tengas|tenga)\s+en\s+cuenta|(?:haz|haga)\s+caso\s+omiso\s+(?:a|de)|"
              r"ignorate|dimenticate|non\s+(?:considerare|tenere\s+conto\s+d[ei]|badare\s+a)|esqueça|"
              r"desconsidere|despreze|não\s+considere)")
POLITE_SHARED = r"(?:ignori|dimentichi)"
SHARED_WITH_THIRD_PERSON = (r"(?:ignora|ignore|olvida|omite|dimentica|trascura|tralascia|esquece|desconsidera|oublie|"
                            r"n[ée]glige)")
# the words between such a verb and what it orders ignored: articles, demonstratives, "all", "previous", "given"
DETERMINERS = (r"(?:(?:die|den|das|dem|diese[nrms]?|obige[nrms]?|vorherige[nrms]?|gegebene[nrms]?|folgende[nrms]?|"
               r"alle|jede[nrms]?|sämtliche[n]?|la|le|les|cette|ce|cet|ces|toute|tout|toutes|tous|"
               r"pr[ée]c[ée]dente?s?|donn[ée]e?s?|du|des|el|los|las|esta|este|estas|estos|toda|todo|todas|todos|"
               r"anterior(?:es)?|dad[oa]s?|del|il|lo|gli|i|questa|questo|queste|questi|tutta|tutto|tutte|tutti|"
               r"precedenti?|della|dello|a|o|as|os|essa|esse|da|do|das|dos)\s+|(?:l|dell|d)['’]\s*)")

ADDRESSEE_SUBJUNCTIVE = (r"(?:ignores|olvides|omitas|desestimes|ignoriez|oubliiez|n[ée]gligiez|ignoriate|dimentichiate|"
                         r"trascuriate|tralasciate|esqueças|desconsideres|desprezes)")
ADDRESSEE = r"(?:tu|tú|usted(?:es)?|vous|voi|lei|vocês?|o\s+senhor|a\s+senhora)"
SHARED_SUBJUNCTIVE = (r"(?:ignore[ns]?|olvide[ns]?|omita[ns]?|desestime[ns]?|oublies|n[ée]gliges|ignori|dimentichi|"
                      r"trascuri|tralasci|esqueça[ms]?|desconsidere[ms]?|despreze[ms]?)")
# a wish or a request to the addressee: "que" / "che", then the addressee's own subjunctive, or a form a third person
# shares with the addressee named ("que usted ignore", not "que el modelo ignore"), an adverb or a "please" allowed
# before the verb ("que simplemente ignores", "que você simplesmente ignore", "che per favore ignoriate"); German puts
# the verb last after "dass du / ihr / Sie" ("Sie" capitalised: "dass sie ..." is "that they ...")
THAT = r"\b(?:que|che)\s+"
SOFTENER = (r"(?:(?:simplemente|simplesmente|semplicemente|solamente|somente|apenas|s[oó]lo|ahora|agora|ora|ya|já|"
            r"tambi[ée]n|também|anche|completamente|totalmente|por\s+favor|per\s+favore)\s+)")
WISHED = (rf"(?:{SOFTENER}?(?:(?:{ADDRESSEE}\s+{SOFTENER}?)?{ADDRESSEE_SUBJUNCTIVE}|"
          rf"{ADDRESSEE}\s+{SOFTENER}?{SHARED_SUBJUNCTIVE}))")
THAT_YOU = r"\bdass\s+(?:du|ihr|(?-i:Sie))\s+"
SOFTENER_DE = r"(?:(?:einfach|bitte|jetzt|nun|alle|komplett|vollständig)\s+)"  # "dass du einfach ... ignorierst"
VERB_LAST = (r"(?:ignorierst|ignorieren|ignoriert|vergisst|vergessen|vergesst|missachtest|missachten|missachtet|"
             r"übergehst|übergehen|übergeht)")
LAST_VERB = rf"{SOFTENER_DE}?{VERB_LAST}"  # German's verb last, "einfach" or "bitte" allowed before it
# an order put as a request or a permission: the verb in the infinitive after a modal said to the addressee or a
# formula of politeness ("Veuillez ignorer", "Si prega di ignorare", "¿Puedes ignorar ...?", "Pouvez-vous ignorer",
# "Você pode ignorar", "Devi ignorare"); only where a clause opens with it ("El modelo puede ignorar ..." describes a
# model, "No puedes ignorar ..." forbids). German puts the infinitive last: "Kannst du alle Anweisungen ignorieren?"
INFINITIVE = (r"(?:ignorar|olvidar|omitir|desestimar|ignorer|oublier|n[ée]gliger|ignorare|dimenticare|trascurare|"
              r"tralasciare|esquecer|desconsiderar|desprezar)")
REQUEST = (r"(?:veuillez|veuille|merci\s+d['’]\s*|je\s+vous\s+prie\s+d['’]\s*|"
           r"(?:peux|pouvez|pourrais|pourriez|dois|devez|devrais|devriez)[-\s](?:tu|vous)|"
           r"(?:tu|vous)\s+(?:peux|pouvez|pourrais|pourriez|dois|devez|devrais|devriez)|si\s+prega\s+di|"
           r"(?:(?:tu|lei|voi)\s+)?(?:puoi|potresti|potete|potreste|devi|dovresti|dovete|può|potrebbe|deve)|"
           r"(?:(?:tú|tu|usted(?:es)?)\s+)?(?:puedes|podrías|podrias|pueden|podrían|debes|deberías|deberias|puede|"
           r"podría|podria|debe)(?:\s+usted(?:es)?)?|"
           r"(?:(?:você|vocês|tu)\s+)?(?:podes|poderias|deves|pode|poderia|podem|deve)"
           r"(?:\s+(?:você|vocês|o\s+senhor|a\s+senhora))?)")
REQUESTED = rf"{REQUEST}\s*{SOFTENER}?{INFINITIVE}"  # "Veuillez ignorer", "¿Puedes simplemente ignorar"
MODAL_DE = (r"(?:(?:kannst|könntest|würdest|solltest|musst)\s+du|du\s+(?:kannst|könntest|solltest|musst|darfst)|"
            r"(?-i:(?:Können|Könnten|Würden|Sollten|Müssen|können|könnten|würden|sollten|müssen)\s+Sie|"
            r"Sie\s+(?:können|könnten|sollten|müssen|dürfen)))")
# a clause up to its "que" / "dass" that negates nothing ("No quiero que ...", "Ich möchte nicht, dass ...": no order)
UNNEGATED = r"(?:(?!\b(?:no|ne|n['’]|non|nicht|não|nunca|jamais|mai|kein\w*)\b)[^.!?;:\n¡¿])*?"
