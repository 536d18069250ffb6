"""Sentence banks of the built-in benchmark: podcast talk per emotion and topic, speaker
reference sentences, and consultation lines (respiratory and other complaints).

Words match the emotion the voice renders, so both the text (ASR, sentiment) and the
prosody carry it.  Banks are plain data; choices are made by the seeded generators.

>>> fill("Honestly, {thing} made me happy.", "the garden")
'Honestly, the garden made me happy.'
>>> fill("{thing} was great.", "the garden")
'The garden was great.'
"""
from __future__ import annotations

import re

#: topic phrase -> things people say about it
TOPICS: dict[str, tuple[str, ...]] = {
    "the new train line": ("the new train line", "the morning commute", "the station upgrade"),
    "home cooking": ("my sourdough bread", "the curry recipe", "the dinner party"),
    "the football season": ("the football season", "the final match", "our local team"),
    "gardening": ("the vegetable garden", "the tomato harvest", "the new greenhouse"),
    "a summer holiday": ("the summer holiday", "the beach house", "the flight home"),
    "working from home": ("working from home", "the video meeting", "the new office chair"),
    "the local library": ("the local library", "the book club", "the reading room"),
    "learning the piano": ("the piano class", "the spring recital", "the old upright piano"),
    "moving house": ("the house move", "the new flat", "the removal van"),
    "the city marathon": ("the city marathon", "the training plan", "the last mile"),
    "a science documentary": ("the science documentary", "the episode about whales", "the space series"),
    "the school reunion": ("the school reunion", "my old class photo", "the reunion dinner"),
    "adopting a dog": ("the new puppy", "the dog shelter", "our evening walk"),
    "the town festival": ("the town festival", "the fireworks show", "the food market"),
    "a camping trip": ("the camping trip", "the tent", "the mountain trail"),
    "a new phone": ("my new phone", "the software update", "the phone battery"),
    "the weather": ("the heat wave", "the storm last week", "the long winter"),
    "a family wedding": ("my cousin's wedding", "the wedding speech", "the wedding cake"),
}

EMOTION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "Happy": (
        "I have to say, {thing} made me really happy this week.",
        "Honestly, {thing} turned out wonderful, I loved every minute of it!",
        "What a great time we had with {thing}, it was fantastic.",
        "I'm so glad about {thing}, it really brightened my day.",
        "You know, {thing} was the best thing that happened to me all month.",
        "It was brilliant, {thing} went even better than I hoped.",
        "I couldn't stop smiling about {thing}, it was just lovely.",
        "We laughed so much about {thing}, what a joy.",
        "I'm thrilled, {thing} was a real delight for everyone.",
        "Oh, {thing} was such a happy surprise, I feel great about it.",
    ),
    "Sad": (
        "I feel pretty low about {thing}, it just didn't work out.",
        "Honestly, {thing} left me feeling sad and tired.",
        "It was a disappointment, {thing} fell apart and I miss how it used to be.",
        "I keep thinking about {thing} and it makes me so unhappy.",
        "Sadly, {thing} is gone now, and it hurts a little.",
        "I was really down after {thing}, nothing felt right.",
        "It broke my heart a bit, {thing} ended so badly.",
        "I'm sorry to say {thing} was a lonely and gloomy experience.",
        "I cried a little about {thing}, it was such a loss.",
        "Nothing about {thing} went well, and I still feel miserable.",
    ),
    "Angry": (
        "I am furious about {thing}, it was a total mess!",
        "Frankly, {thing} made me so angry, nobody took responsibility!",
        "It is outrageous, {thing} was handled terribly!",
        "I'm fed up with {thing}, this is completely unacceptable!",
        "Don't get me started on {thing}, it drives me mad!",
        "They ruined {thing} and I am absolutely livid about it!",
        "It's ridiculous, {thing} was a disgrace from start to finish!",
        "I was so annoyed about {thing} that I nearly shouted!",
        "Stop it, {thing} is a scandal and somebody has to pay for it!",
        "I'm sick and tired of {thing}, it makes my blood boil!",
    ),
    "Surprise": (
        "Wow, I did not expect {thing} at all, what a shock!",
        "Really? {thing} happened just like that? I'm amazed!",
        "No way, {thing} completely took me by surprise!",
        "I couldn't believe it, {thing} was suddenly everywhere!",
        "Oh my goodness, {thing} turned out nothing like I imagined!",
        "Wait, seriously? {thing} changed overnight? That's astonishing!",
        "What a surprise, {thing} was there out of nowhere!",
        "I was stunned, {thing} appeared without any warning!",
        "Goodness me, {thing} was the last thing I expected to see!",
        "Whoa, {thing} actually worked? I'm completely astonished!",
    ),
    "Neutral": (
        "So, {thing} takes about twenty minutes on a normal day.",
        "I think {thing} is scheduled for the second week of the month.",
        "Basically, {thing} works the same way as before.",
        "We looked at {thing} and wrote down the main details.",
        "The plan for {thing} is written on the website.",
        "Right, {thing} has three parts, and we covered the first one.",
        "In general, {thing} depends on the weather and the budget.",
        "Okay, {thing} was discussed at the meeting on Tuesday.",
        "As far as I know, {thing} is open from nine to five.",
        "Well, {thing} was mentioned in the newsletter last month.",
    ),
}

#: sentences for speaker reference clips: never used inside a recording
REFERENCE_SENTENCES: tuple[str, ...] = (
    "This is a short sample of my speaking voice, recorded for the reference file.",
    "Please use this recording to recognise my voice in the long episode.",
    "Hello, I am one of the hosts, and this is how I normally sound.",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Numbers like seven, twelve and forty two are easy to say clearly.",
    "A calm voice sample helps the system find the same speaker later.",
)


def fill(template: str, thing: str) -> str:
    """Put ``thing`` into a template and capitalise every sentence start."""
    s = template.replace("{thing}", thing)
    return re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), s)


# ---------------------------------------------------------------------------------------
# Clinical consultations
# ---------------------------------------------------------------------------------------
#: Respiratory symptom words written to ``labels["symptoms"]`` when the patient reports them.
RESPIRATORY_SYMPTOMS: tuple[str, ...] = ("cough", "sore throat", "shortness of breath", "wheezing",
                                         "runny nose", "chest tightness", "sneezing", "congestion")

#: (symptom words, patient sentence) for self reports
SELF_REPORTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("cough",), "I've had this dry cough for about two weeks now, and it gets worse at night."),
    (("cough", "sore throat"), "I keep coughing, and my throat is really sore in the mornings."),
    (("shortness of breath",), "I get short of breath when I climb the stairs at work."),
    (("wheezing", "chest tightness"), "My chest feels tight and I can hear myself wheezing."),
    (("runny nose", "sneezing"), "My nose keeps running and I can't stop sneezing."),
    (("congestion", "cough"), "I'm all blocked up, and there's a chesty cough that won't go away."),
    (("cough",), "The cough started after a cold last month and it hasn't cleared."),
    (("sore throat",), "My throat has been scratchy and painful for five days."),
)
#: (symptom words, parent sentence) for proxy reports (a parent speaks about a child)
PROXY_REPORTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("cough",), "My son has had a barking cough for three nights, it keeps him awake."),
    (("wheezing",), "My daughter is wheezing when she runs around in the playground."),
    (("cough", "runny nose"), "My little boy has a runny nose and a cough since nursery started."),
    (("shortness of breath",), "My daughter gets out of breath very quickly these days."),
    (("cough", "sore throat"), "My son says his throat hurts and he coughs all through dinner."),
)
#: non-respiratory complaints (patient sentence)
OTHER_COMPLAINTS: tuple[str, ...] = (
    "I've had a pain in my lower back since I lifted some boxes last week.",
    "There's an itchy rash on my arm that appeared a few days ago.",
    "I keep getting headaches in the afternoon, mostly behind my eyes.",
    "My knee is swollen and it hurts when I walk down the stairs.",
    "I've been feeling very tired and I'm not sleeping well.",
    "My stomach has been upset after meals for about a week.",
    "I twisted my ankle playing tennis on Saturday.",
    "I've been getting dizzy when I stand up too quickly.",
)
PROXY_OTHER: tuple[str, ...] = (
    "My son fell off his bike and his wrist is still sore.",
    "My daughter has a rash on her legs that came up yesterday.",
    "My little boy keeps complaining about tummy aches at school.",
)

DOCTOR_OPENINGS: tuple[str, ...] = (
    "Good morning, come in and take a seat. What brings you in today?",
    "Hello there, nice to see you again. How can I help you today?",
    "Hi, please sit down. What seems to be the problem?",
    "Good afternoon. Tell me what's been going on.",
)
DOCTOR_FOLLOWUPS: tuple[str, ...] = (
    "I see. And when did this start?",
    "Okay. Has it been getting better or worse?",
    "Right. Is there anything that makes it easier?",
    "Understood. How is it affecting your daily routine?",
)
PATIENT_DETAILS: tuple[str, ...] = (
    "It started about ten days ago, and it's a bit worse each day.",
    "It comes and goes, but it's been bothering me most evenings.",
    "Resting helps a little, but it comes back the next day.",
    "I had to take a day off work because of it.",
)
PROXY_DETAILS: tuple[str, ...] = (
    "It started last week, just after the school trip.",
    "He's eating fine, but he's more tired than usual.",
    "She had a mild temperature on Sunday, but that's gone now.",
)
#: doctor asks about respiratory symptoms; the answer for a non-respiratory visit negates them
DOCTOR_RES_CHECK: tuple[str, ...] = (
    "Any cough, cold or trouble breathing recently?",
    "Have you had a cough or a sore throat with this?",
)
NEGATIONS: tuple[str, ...] = (
    "No, no cough at all, my chest is fine.",
    "No, nothing like that, my breathing is normal.",
    "Not really, no sore throat and no cough.",
)
DOCTOR_EXTRA_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("Are you taking any medication at the moment?", "Just some vitamins in the morning, nothing else."),
    ("How have you been sleeping?", "Not too bad, maybe six or seven hours a night."),
    ("Do you have any allergies that I should know about?", "Only to penicillin, as far as I know."),
    ("What kind of work do you do?", "I work in an office, mostly at a computer all day."),
    ("Do you smoke or drink alcohol?", "I don't smoke, and I only drink at weekends."),
    ("Has anyone at home been unwell?", "No, everyone else at home is fine."),
    ("How is your appetite?", "It's normal, I'm eating as usual."),
    ("Have you tried anything for it yet?", "I took some paracetamol, which helped a little."),
)
DOCTOR_PLANS: tuple[str, ...] = (
    "Let me examine you, and then we'll talk about a treatment plan.",
    "I'd like to run a few tests, and we'll see you again in a week.",
    "I'll write you a prescription, and come back if it's not improving.",
    "Let's keep an eye on it. Rest, drink plenty of fluids, and call us if it gets worse.",
)
PATIENT_CLOSINGS: tuple[str, ...] = (
    "Thank you, doctor, that's really helpful.",
    "Okay, thanks very much.",
    "Great, I appreciate it.",
)
