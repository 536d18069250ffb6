"""The cue tables of the rule reading: word patterns naming each task (a change, a comparison of
two speakers, a moment asked for, symptoms heard or said, a song judged) and the absence framing.

Each is a regular-expression alternation matched on the folded question text
(:attr:`harp_lib.understand.reading.Reading.s`) by the task classes' ``read``
(:func:`harp_lib.tasks.read_question`).
"""
from __future__ import annotations

__all__ = ["CHANGE", "WHO", "EMO_Q", "WHEN", "SAME", "SOMEONE", "RESP", "HEARD", "SAID", "AESTH", "ABSENCE",
           "EXCLUDED_CLAUSE"]

CHANGE = (r"chang\w*|shift\w*|evolv\w*|develop\w*|trend\w*|progress\w*|vary|varied|fluctuat\w*|"
          r"go(?:es)?\s+(?:up|down)|went\s+(?:up|down)|rise|rising|rose|fall|falling|fell|drop\w*|"
          r"increas\w*|decreas\w*|grow\w*|grew|becom\w*|became|getting|got\s+(?:more|less)|over the course|"
          r"gets?\s+(?:more|less)|build\w* up|fad(?:e|es|ed|ing)|climb\w*|hold\w* steady|upward\w*|downward\w*|"
          r"shrink\w*|more and more|less and less|"
          r"over time|as (?:the|they|she|he) (?:went|talked|spoke)|from start to finish|move\w*|stay(?:ed)? the same|"
          r"steady|remain\w*")
WHO = (r"which (?:of (?:the|these|those) (?:two|2) )?(?:speaker|person|one|voice|participant)|who\b|speaker a or (?:speaker )?b|\ba or b\b|"
        r"\bb or a\b|\b(?:speaker )?[ab]\b[^?]{0,60}\bthan (?:speaker )?[ab]\b|\bother way (?:round|around)\b|"
        r"\b[ab] (?:vs\.?|versus) [ab]\b")
EMO_Q = (r"emotion\w*|feel\w*|felt|mood|sound(?:ed|s)?\s+(?:like|happy|sad|angry)|how did (?:they|she|he|the speaker) "
         r"sound|what (?:was|were) (?:their|his|her) (?:tone|state)|emotional state|affect|express\w*|tone")
WHEN = (r"when\b|what time|at what point|which moment|what moment|where in|find the (?:moment|part|point|segment)|"
        r"point (?:me )?to|locate|timestamp|how far in|at which|\bwhere\b")
SAME = r"same (?:emotion|feeling|mood)|(?:as|like) in the (?:clip|example|reference|sample)|" \
        r"like (?:the|my) (?:clip|example|reference|sample)|matches? the (?:clip|example|reference|sample)|" \
        r"as the (?:clip|example|reference|sample)|emotion (?:clip|example|sample)"
SOMEONE = r"someone|anyone|anybody|somebody|any speaker|either speaker|any of the speakers|a speaker\b"
RESP = (r"respirat\w*|cough\w*|breath\w*|wheez\w*|sneez\w*|throat|chest|phlegm|sputum|congest\w*|"
        r"short of breath|asthma|lung\w*|airway\w*|symptom\w*|fever\w*|cold\b|sniffl\w*|inhaler")
HEARD = (r"exhibit\w*|audibl\w*|hear\w*|heard|listen\w*|sound\w*|actually|in the audio|on the recording|"
         r"can you tell from|noise|did (?:the patient|they|he|she|the child|the speaker) (?:cough|sneeze|clear)|"
         r"(?:cough|sneez|clear\w* (?:their|his|her) throat)\w* (?:during|in|on)|any (?:coughs?|coughing|sneez\w*)|"
         r"was there (?:any )?(?:coughing|a cough|sneezing)|was (?:any )?(?:coughing|sneezing)|displayed|show(?:ed|n)? any")
SAID = (r"report\w*|mention\w*|complain\w*|describ\w*|said|say|says|tell|told|talk\w* about|bring up|brought up|"
        r"state[ds]?\b|claim\w*|admit\w*|disclos\w*|discuss\w*|speak\w* of|spoke of|note[ds]?\b|"
        r"suffer\w*|ha(?:ve|s|d) (?:any )?(?:respiratory|a cough|cough|breathing)|experienc\w*")
AESTH = (r"aesthetic\w*|better|best|worse|worst|quality|prefer\w*|like\w*|enjoy\w*|nicer|good|great|"
         r"sound(?:s|ed)? (?:good|better|nicer|worse)|more pleasing|pleasing|appeal\w*|musical\w*|rated|"
         r"higher[- ]rated|rate|rating|score\w*|superior|inferior|stronger|weaker|impressive")


#: Yes/no questions that ask whether something was *absent* (the answer flips); negative
#: questions such as "didn't the patient cough?" are answered like positive ones, so not here.
ABSENCE = (r"\bfree (?:of|from)\b|\babsence of\b|\b(?:was|were) there no\b|\bno (?:sign|trace|evidence) of\b|"
           r"\b(?:said|say|mentioned|reported) nothing\b|\bnothing (?:was )?(?:said|mentioned|reported) about\b|"
           r"\b(?:true|correct|right|confirm) that\b[^?]*\b(?:no|not|never|didn't|did not|wasn't|was not)\b|"
           r"\bentirely without\b|\bwithout (?:a single|any)\b|"
           r"\b(?:did|does|do|was|were)\s+(?:the patient|they|he|she|anyone|anybody|the child)\s+not\b|"
           r"\bcould no\b|\bnobody (?:cough|sneez)\w*|\bno one (?:cough|sneez)\w*")

#: "not counting / leaving aside what was said, ...": that clause names what is excluded
EXCLUDED_CLAUSE = (r"\b(?:not counting|leaving aside|setting aside|ignoring|apart from|regardless of|other than|"
                   r"not what (?:was|is|they|he|she|the patient) (?:said|say|says|reported))"
                   r"\b[^,;:]*[,;:]")
