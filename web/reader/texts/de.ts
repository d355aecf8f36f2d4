import { decimalComma } from './decimal.ts';
import type { Texts } from './en.ts';

/** The reader page in German, formal (Sie), in the tone of the code emails (src/auth/mail/texts/de.ts). */
export const de = {
  lang: 'de',
  appName: 'Sealpost',
  loading: 'Wird geladen…',
  skipToContent: 'Zum Inhalt springen',
  language: 'Sprache',

  signIn: {
    title: 'Ihre versiegelte Nachricht lesen',
    from: 'Von',
    subject: 'Betreff',
    noSubject: '(kein Betreff)',
    introSms:
      'Bestätigen Sie zum Lesen, dass sie für Sie bestimmt ist: ' +
      'Geben Sie Ihre E-Mail-Adresse und Ihre Mobilnummer ein. ' +
      'Wir senden Ihnen einen Einmalcode per SMS.',
    introEmail:
      'Bestätigen Sie zum Lesen, dass sie für Sie bestimmt ist: Geben Sie Ihre E-Mail-Adresse ein. ' +
      'Wir senden Ihnen einen Einmalcode per E-Mail.',
    introBoth:
      'Bestätigen Sie zum Lesen, dass sie für Sie bestimmt ist: ' +
      'Geben Sie Ihre E-Mail-Adresse ein und, falls der Absender sie hat, Ihre Mobilnummer. ' +
      'Wir senden Ihnen einen Einmalcode.',
    email: 'E-Mail-Adresse',
    emailHint: 'Die Adresse, an die diese Nachricht gesendet wurde.',
    mobile: 'Mobilnummer',
    mobileOptional: 'Mobilnummer (falls der Absender sie hat)',
    mobileHint: 'Im internationalen Format, zum Beispiel +41 79 123 45 67.',
    send: 'Code senden',
    sending: 'Wird gesendet…',
  },

  code: {
    title: 'Code eingeben',
    sentSms: (length: number, to: string) => `Wir haben einen ${length}-stelligen Code per SMS an ${to} gesendet.`,
    sentEmail: (length: number, to: string) => `Wir haben einen ${length}-stelligen Code per E-Mail an ${to} gesendet.`,
    validFor: (duration: string) => `Der Code ist ${duration} gültig.`,
    label: 'Code',
    remember: 'Auf diesem Gerät angemeldet bleiben',
    rememberHint: (duration: string) =>
      `Für ${duration} oder bis Sie sich abmelden. Kreuzen Sie dies auf einem gemeinsam genutzten Computer nicht an.`,
    submit: 'Anmelden',
    checking: 'Wird geprüft…',
    resend: 'Neuen Code senden',
    resendIn: (duration: string) => `Sie können in ${duration} einen neuen Code anfordern.`,
    resent: 'Ein neuer Code ist unterwegs. Der alte gilt nicht mehr.',
    otherAddress: 'Andere Adresse verwenden',
    sentEarlierSms: (to: string, time: string) => `Wir haben Ihnen um ${time} einen Code per SMS an ${to} gesendet.`,
    sentEarlierEmail: (to: string, time: string) =>
      `Wir haben Ihnen um ${time} einen Code per E-Mail an ${to} gesendet.`,
    stillValidFor: (duration: string) => `Er ist noch ${duration} gültig.`,
    attemptsLeft: (n: number) => (n === 1 ? 'Sie haben noch 1 Versuch.' : `Sie haben noch ${n} Versuche.`),
  },

  message: {
    from: 'Von',
    to: 'An',
    cc: 'Cc',
    replyTo: 'Antwort an',
    date: 'Datum',
    noSubject: '(kein Betreff)',
    sealedOn: (date: string, cid: string) => `Versiegelt am ${date} — Inhalt geprüft anhand der IPFS-CID ${cid}.`,
    sealTitle: 'Das Siegel ist intakt',
    sealExplain:
      'Diese Nachricht ist genau so, wie sie versiegelt wurde: ' +
      'Ihr Fingerabdruck (SHA-256) stimmt mit der versiegelten Kopie überein.',
    sha256: 'SHA-256',
    bodyFrame: 'Nachrichtentext',
    noBody: 'Diese Nachricht hat keinen Text.',
    remoteImagesBlocked: (count: number) =>
      count === 1
        ? 'Ein Bild aus dem Internet wird nicht angezeigt, damit der Absender nicht sehen kann, wann Sie dies lesen.'
        : `${count} Bilder aus dem Internet werden nicht angezeigt, ` +
          'damit der Absender nicht sehen kann, wann Sie dies lesen.',
    showImages: 'Bilder anzeigen',
    attachments: 'Anhänge',
    download: 'Herunterladen:',
    signOut: 'Abmelden',
    signingOut: 'Wird abgemeldet…',
    signOutFailed: 'Sie sind noch angemeldet: Das Abmelden hat nicht funktioniert.',
  },

  mobile: {
    title: 'Mobilnummer ändern',
    explain:
      'Codes für diese Nachricht gehen an Ihre Mobilnummer. ' +
      'Um sie zu ändern, bestätigen Sie einen Code an Ihre bisherige Nummer und danach einen an die neue Nummer.',
    newNumber: 'Neue Mobilnummer',
    newNumberHint: 'Im internationalen Format, zum Beispiel +41 79 123 45 67.',
    start: 'Code an meine bisherige Nummer senden',
    starting: 'Wird gesendet…',
    codeTo: (to: string) => `Geben Sie den Code ein, den wir an ${to} gesendet haben.`,
    code: 'Code',
    confirm: 'Bestätigen',
    confirming: 'Wird geprüft…',
    changed: (to: string) =>
      `Ihre Mobilnummer ist jetzt ${to}. Ihre bisherige Nummer und Ihre E-Mail-Adresse wurden benachrichtigt.`,
  },

  laterMobile: {
    title: 'Spätere Nachrichten per SMS schützen',
    explain:
      'Sie haben sich mit einem Code per E-Mail angemeldet. Das kann jeder, der Ihr Postfach lesen kann. ' +
      'Fügen Sie Ihre Mobilnummer hinzu: Die Codes für die versiegelten Nachrichten, die Ihnen diese Organisation ' +
      'ab jetzt sendet, kommen per SMS. Diese Nachricht bleibt bei der Anmeldung per E-Mail.',
    number: 'Mobilnummer',
    numberHint: 'Im internationalen Format, zum Beispiel +41 79 123 45 67.',
    start: 'Code an diese Nummer senden',
    starting: 'Wird gesendet…',
    codeTo: (to: string) => `Geben Sie den Code ein, den wir an ${to} gesendet haben.`,
    code: 'Code',
    confirm: 'Nummer hinzufügen',
    confirming: 'Wird geprüft…',
    added: (to: string) =>
      `Erledigt: Codes für Ihre späteren Nachrichten gehen an ${to}. Ihre E-Mail-Adresse wurde informiert.`,
  },

  others: {
    title: 'Ihre weiteren versiegelten Nachrichten',
    explain: 'Diese können Sie ohne weiteren Code öffnen.',
    meta: (sender: string, date: string) => `von ${sender}, versiegelt am ${date}`,
  },

  list: {
    previous: 'Vorherige Nachrichten',
    next: 'Weitere Nachrichten',
    range: (from: number, to: number) => `Nachrichten ${from} bis ${to}`,
    navigation: 'Seiten Ihrer weiteren Nachrichten',
  },

  reply: {
    title: 'Antworten',
    to: (to: string) => `Ihre Antwort geht an ${to}.`,
    text: 'Ihre Antwort',
    draftSaved: 'Entwurf gespeichert. Sie können später weiterschreiben, auch auf einem anderen Gerät.',
    draftSaving: 'Entwurf wird gespeichert…',
    draftRestored: 'Ihr nicht gesendeter Entwurf wurde wiederhergestellt.',
    draftFailed:
      'Ihre gespeicherte Antwort konnte nicht geladen werden. ' +
      'Damit nichts davon verloren geht, können Sie antworten, sobald sie geladen ist.',
    retry: 'Erneut versuchen',
    files: 'Angehängte Dateien',
    addFiles: 'Dateien anhängen',
    limits: (perFile: string, total: string) => `Bis zu ${perFile} pro Datei und ${total} insgesamt.`,
    used: (used: string, total: string) => `${used} von ${total} belegt.`,
    uploading: (name: string) => `${name} wird hochgeladen`,
    uploaded: (name: string) => `${name} ist angehängt.`,
    remove: (name: string) => `${name} entfernen`,
    removed: (name: string) => `${name} wurde entfernt.`,
    copyToMe: (email: string) => `Mir eine Kopie senden (an ${email})`,
    send: 'Antwort senden',
    sending: 'Wird gesendet…',
    empty: 'Bitte schreiben Sie zuerst eine Antwort oder hängen Sie eine Datei an.',
    waitForUploads: 'Bitte warten Sie, bis die Dateien hochgeladen sind.',
  },

  drafts: {
    conflictTitle: 'Diese Antwort wurde auch in einem anderen Fenster geändert',
    conflictExplain:
      'Es geht nichts verloren. Wählen Sie den Text, der bleiben soll; Sie können ihn vor dem Senden noch ändern.',
    mine: 'In diesem Fenster geschrieben',
    theirs: 'Im anderen Fenster gespeichert',
    keepMine: 'Text aus diesem Fenster behalten',
    keepTheirs: 'Text aus dem anderen Fenster behalten',
    keepBoth: 'Beide Texte behalten, nacheinander',
    chosen: 'Der gewählte Text steht in Ihrer Antwort und wird gespeichert.',
    updated: 'Diese Antwort wurde in einem anderen Fenster geändert; hier steht jetzt der dort gespeicherte Text.',
    checkAgain: 'Diese Antwort wurde in einem anderen Fenster geändert. Bitte prüfen Sie sie und senden Sie erneut.',
    alreadySentTitle: 'Ihre Antwort wurde bereits gesendet',
    alreadySent: (time: string) => `Ihre Antwort wurde bereits am ${time} gesendet.`,
    alreadySentExplain:
      'Sie wurde aus einem anderen Fenster oder von einem anderen Gerät gesendet. ' +
      'Was Sie hier geschrieben haben, wurde nicht gesendet.',
    unsent: 'In diesem Fenster geschrieben, nicht gesendet',
    newReply: 'Neue Antwort mit diesem Text beginnen',
    writeReply: 'Neue Antwort schreiben',
    lastSent: (time: string) => `Ihre letzte Antwort auf diese Nachricht wurde am ${time} gesendet.`,
  },

  sent: {
    title: 'Ihre Antwort wurde gesendet',
    body: (to: string) => `Ihre Antwort ist unterwegs an ${to}.`,
    back: 'Zurück zur Nachricht',
  },

  signedOut: {
    title: 'Sie sind abgemeldet',
    body:
      'Ihre Sitzung auf diesem Gerät ist beendet. ' +
      'Um die Nachricht wieder zu lesen, melden Sie sich mit einem neuen Code an.',
    again: 'Wieder anmelden',
  },

  sessions: {
    signOutEverywhere: 'Überall abmelden',
    signingOutEverywhere: 'Wird überall abgemeldet…',
    signOutEverywhereFailed: 'Sie sind noch angemeldet: Das Abmelden überall hat nicht funktioniert.',
    signedOutEverywhere: {
      title: 'Sie sind überall abgemeldet',
      body:
        'Alle Ihre Sitzungen sind beendet: auf diesem Gerät, in anderen Browsern und für Ihre anderen Nachrichten. ' +
        'Um eine Nachricht wieder zu lesen, melden Sie sich mit einem neuen Code an.',
    },
  },

  brokenSeal: {
    title: 'Das Siegel ist gebrochen',
    body:
      'Diese Nachricht wird nicht angezeigt: Ihr Inhalt stimmt nicht mehr mit dem überein, was versiegelt wurde. ' +
      'Sie wurde möglicherweise nach dem Versiegeln verändert.',
    cid: (cid: string) => `Versiegelter Inhalt: IPFS-CID ${cid}`,
    copy: (cluster: string, state: string) => `Die Kopie auf ${cluster}: ${state}`,
    copyStates: { damaged: 'beschädigt', missing: 'fehlt', unreachable: 'nicht erreichbar' },
    advice:
      'Bitte verlassen Sie sich auf keine Kopie dieser Nachricht. ' +
      'Informieren Sie den Absender und nennen Sie ihm die Referenz unten.',
  },

  ended: {
    withdrawnTitle: 'Diese Nachricht wurde zurückgezogen',
    expiredTitle: 'Diese Nachricht ist abgelaufen',
    withdrawnOn: (date: string) => `Diese Nachricht wurde am ${date} zurückgezogen.`,
    expiredOn: (date: string) => `Diese Nachricht ist am ${date} abgelaufen.`,
    gone: 'Ihr Inhalt ist nicht mehr verfügbar: Sie kann nicht mehr gelesen oder beantwortet werden.',
    ask: (contact: string) => `Wenden Sie sich an ${contact}, wenn Sie sie benötigen.`,
    askSender: 'Wenden Sie sich an den Absender, wenn Sie sie benötigen.',
  },

  fatal: {
    title: 'Diese Nachricht kann nicht angezeigt werden',
    badLink: 'Dieser Link ist unvollständig. Bitte öffnen Sie den Link aus Ihrer E-Mail erneut.',
    retry: 'Erneut versuchen',
  },

  sessionEnded: 'Ihre Sitzung ist abgelaufen. Bitte melden Sie sich erneut an.',

  units: {
    bytes: (n: number) => (n === 1 ? '1 Byte' : `${n} Bytes`),
    kb: (n: string) => `${decimalComma(n)} KB`,
    mb: (n: string) => `${decimalComma(n)} MB`,
    gb: (n: string) => `${decimalComma(n)} GB`,
    seconds: (n: number) => (n === 1 ? '1 Sekunde' : `${n} Sekunden`),
    minutes: (n: number) => (n === 1 ? '1 Minute' : `${n} Minuten`),
    hours: (n: number) => (n === 1 ? '1 Stunde' : `${n} Stunden`),
    days: (n: number) => (n === 1 ? '1 Tag' : `${n} Tage`),
  },

  errors: {
    expired_code: 'Dieser Code ist abgelaufen. Bitte fordern Sie einen neuen Code an und geben Sie diesen ein.',
    incorrect_code:
      'Dieser Code stimmt nicht. ' +
      'Bitte prüfen Sie die Ziffern und versuchen Sie es erneut – oder fordern Sie einen neuen Code an.',
    invalid_code_or_email:
      'Dieser Code stimmt nicht. ' +
      'Bitte prüfen Sie die Ziffern in unserer neuesten E-Mail an Sie, oder fordern Sie einen neuen Code an.',
    invalid_email: 'Bitte geben Sie eine vollständige E-Mail-Adresse ein, zum Beispiel name@example.com.',
    invalid_mobile:
      'Bitte geben Sie Ihre Mobilnummer im internationalen Format ein, ' +
      'beginnend mit + und der Landesvorwahl, zum Beispiel +41 79 123 45 67.',
    invalid_bcc_address: 'Die Adresse für Ihre Kopie ist keine gültige E-Mail-Adresse.',
    email_mismatch:
      'Eine Kopie der Antwort kann nur an Ihre eigene Adresse gehen, die, mit der Sie sich angemeldet haben.',
    unauthorized_user:
      'Diese Nachricht wurde nicht an diese Adresse oder Mobilnummer gesendet. ' +
      'Bitte prüfen Sie beides, oder fragen Sie den Absender.',
    forbidden_auth_method:
      'Diese Adresse meldet sich auf andere Weise an. Bitte prüfen Sie, ob der Absender Ihre Mobilnummer hat.',
    forbidden_file_type:
      'Diese Art von Datei kann nicht angehängt werden (zum Beispiel Programme und Skripte). ' +
      'Bitte hängen Sie stattdessen ein Dokument oder Bild an.',
    malware_detected: 'Diese Datei scheint einen Virus zu enthalten und wurde deshalb nicht angehängt.',
    file_too_large: 'Diese Datei ist zu groß, um sie anzuhängen.',
    upload_limit_reached:
      'Zusammen mit den bereits angehängten Dateien ist diese Datei zu groß. ' +
      'Entfernen Sie eine Datei oder senden Sie weniger.',
    new_mobile_conflict: 'Das ist bereits Ihre Mobilnummer.',
    sms_rate_limit:
      'Es wurden zu viele Codes angefordert. Bitte warten Sie einen Moment, bevor Sie einen neuen anfordern.',
    email_and_mobile_mismatch:
      'Diese E-Mail-Adresse und diese Mobilnummer gehören nicht zusammen. Bitte prüfen Sie beides.',
    code_replaced:
      'Ein neuerer Code hat diesen ersetzt, er gilt nicht mehr. Bitte geben Sie den Code aus der neuesten Nachricht ' +
      'ein; kein Versuch wurde verbraucht.',
    code_attempts_exceeded:
      'Dieser Code kann nicht mehr verwendet werden: Er wurde zu oft falsch eingegeben. ' +
      'Bitte fordern Sie einen neuen an.',
    message_withdrawn: 'Diese Nachricht wurde vom Absender zurückgezogen und kann nicht mehr gelesen werden.',
    message_expired: 'Diese Nachricht ist abgelaufen und kann nicht mehr gelesen werden.',
    mobile_required: 'Zum Schutz dieser Nachricht wird eine Mobilnummer benötigt.',
    seal_broken:
      'Das Siegel ist gebrochen: ' +
      'Diese Nachricht stimmt nicht mehr mit dem Versiegelten überein und wird daher nicht angezeigt.',
    validation_failed:
      'Etwas im Formular ist nicht richtig ausgefüllt. Bitte prüfen Sie es und versuchen Sie es erneut.',
    not_found:
      'Diese Nachricht gibt es nicht oder nicht mehr. Bitte prüfen Sie den Link, oder fragen Sie den Absender.',
    unauthenticated: 'Ihre Sitzung ist abgelaufen. Bitte melden Sie sich erneut an.',
    forbidden: 'Das ist nicht erlaubt.',
    csrf_token_invalid: 'Diese Seite war lange geöffnet. Bitte laden Sie sie neu und versuchen Sie es erneut.',
    conflict: 'Inzwischen hat sich etwas geändert. Bitte laden Sie die Seite neu und versuchen Sie es erneut.',
    draft_conflict:
      'Diese Antwort wurde in einem anderen Fenster oder auf einem anderen Gerät geändert. ' +
      'Sie muss neu geladen werden, bevor sie geändert oder gesendet werden kann.',
    reply_already_sent: 'Diese Antwort wurde bereits aus einem anderen Fenster oder von einem anderen Gerät gesendet.',
    payload_too_large: 'Das ist zu groß zum Senden.',
    unavailable: 'Der Dienst ist gerade ausgelastet. Bitte versuchen Sie es in einer Minute erneut.',
    upstream_failed:
      'Die Nachricht kann gerade nicht abgerufen werden. Bitte versuchen Sie es in ein paar Minuten erneut.',
    internal: 'Bei uns ist etwas schiefgegangen. Bitte versuchen Sie es später erneut.',
  },

  codeState: {
    waitForNew: (duration: string) =>
      `Soeben wurde ein Code gesendet, der weiterhin gilt. Einen neuen können Sie in ${duration} anfordern.`,
  },

  errorFallback: {
    network: 'Keine Verbindung zum Server. Bitte prüfen Sie Ihre Internetverbindung und versuchen Sie es erneut.',
    status: (status: number) =>
      status >= 500
        ? 'Bei uns ist etwas schiefgegangen. Bitte versuchen Sie es später erneut.'
        : 'Das hat nicht funktioniert. Bitte versuchen Sie es erneut.',
    retryIn: (duration: string) => `Bitte versuchen Sie es in ${duration} erneut.`,
    reference: (id: string) => `Referenz: ${id}`,
  },

  methodHint: {
    needsMobile:
      'Für diese Adresse kommt der Code per SMS. Bitte geben Sie die Mobilnummer ein, die der Absender von Ihnen hat.',
    needsEmail: 'Für diese Adresse kommt der Code per E-Mail. Bitte lassen Sie die Mobilnummer leer.',
  },
} satisfies Texts;
