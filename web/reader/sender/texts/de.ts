import { de as reader } from '../../texts/de.ts';
import type { SenderTexts } from './en.ts';

/** The sender's page in German, formal (Sie), as the reader page. */
export const de = {
  lang: 'de',
  appName: 'Sealpost',
  loading: 'Wird geladen…',
  skipToContent: 'Zum Inhalt springen',
  language: 'Sprache',

  signIn: {
    title: 'Ihre versiegelten Nachrichten',
    intro:
      'Sehen Sie, wer Ihre versiegelten Nachrichten erhalten und gelesen hat, ziehen Sie sie zurück oder ändern ' +
      'Sie ihr Ablaufdatum. Melden Sie sich mit einem Einmalcode an, den wir an Ihre E-Mail-Adresse senden.',
    email: 'Ihre E-Mail-Adresse',
    emailHint: 'Die Adresse, von der Sie versiegelte Nachrichten senden.',
    send: 'Code senden',
    sending: 'Wird gesendet…',
  },

  code: {
    title: 'Code eingeben',
    sent: (length: number, to: string) =>
      `Falls sich ${to} hier anmelden darf, haben wir einen ${length}-stelligen Code per E-Mail dorthin gesendet.`,
    validFor: (duration: string) => `Der Code ist ${duration} gültig.`,
    label: 'Code',
    submit: 'Anmelden',
    checking: 'Wird geprüft…',
    resend: 'Neuen Code senden',
    resendIn: (duration: string) => `Sie können in ${duration} einen neuen Code anfordern.`,
    resent: 'Ein neuer Code ist unterwegs. Der alte gilt nicht mehr.',
    otherAddress: 'Andere Adresse verwenden',
    attemptsLeft: (n: number) => (n === 1 ? 'Sie haben noch 1 Versuch.' : `Sie haben noch ${n} Versuche.`),
    newCode: 'Neuen Code senden',
  },

  list: {
    title: 'Ihre versiegelten Nachrichten',
    signedInAs: (sender: string) => `Angemeldet als ${sender}.`,
    search: 'Nach Empfänger oder Betreff suchen',
    searchButton: 'Suchen',
    showAll: 'Alle zeigen',
    noSubject: '(kein Betreff)',
    none: 'Sie haben noch keine Nachricht versiegelt.',
    noMatch: (query: string) => `Keine Nachricht passt zu «${query}».`,
    results: (n: number) => (n === 1 ? '1 Nachricht angezeigt.' : `${n} Nachrichten angezeigt.`),
    sealedOn: (date: string) => `Versiegelt am ${date}`,
    recipients: (n: number) => (n === 1 ? '1 Empfänger' : `${n} Empfänger`),
    ended: 'Beendet',
    older: 'Ältere Nachrichten zeigen',
    loadingOlder: 'Wird geladen…',
  },

  detail: {
    back: 'Zurück zur Liste',
    noSubject: '(kein Betreff)',
    sealed: 'Versiegelt',
    endDate: 'Ablaufdatum',
    noEndDate: 'Keines: Sie bleibt lesbar, bis sie zurückgezogen wird.',
    withdrawnOn: (date: string) => `Am ${date} für alle zurückgezogen.`,
    expiredOn: (date: string) => `Am ${date} abgelaufen.`,
    recipients: 'Empfänger',
    signIn: 'Anmeldung',
    signInEmail: 'Mit einem Code per E-Mail (keine Mobilnummer)',
    signInSms: {
      header: 'Per SMS, an die Nummer aus der Nachricht',
      confirmed: 'Per SMS, an die vom Empfänger bestätigte Nummer',
      directory: 'Per SMS, an die Nummer aus dem Kontaktverzeichnis',
    },
    notified: 'Benachrichtigt',
    firstOpened: 'Zuerst geöffnet',
    lastOpened: 'Zuletzt geöffnet',
    failedSignIns: 'Fehlgeschlagene Anmeldungen',
    downloads: 'Heruntergeladene Anhänge',
    replies: 'Gesendete Antworten',
    withdrawn: 'Zurückgezogen',
    not: 'Noch nicht',
    never: 'Nie',
    trail: 'Protokoll',
    trailExplain: 'Jedes Ereignis dieser Nachricht, mit Zeit und maskierter Adresse des Geräts, als Datei.',
    trailCsv: 'Protokoll als CSV herunterladen',
    trailJson: 'Protokoll als JSON herunterladen',
  },

  withdraw: {
    title: 'Zurückziehen',
    everyone: 'Für alle zurückziehen',
    one: (email: string) => `Für ${email} zurückziehen`,
    confirmEveryone:
      'Diese Nachricht für alle Empfänger zurückziehen? Niemand kann sie danach noch lesen oder beantworten.',
    confirmOne: (email: string) =>
      `Diese Nachricht für ${email} zurückziehen? Diese Person kann sie danach nicht mehr lesen oder beantworten.`,
    reason: 'Grund',
    reasonHint: 'Wird aufbewahrt; nur Sie und die Betreiber sehen ihn.',
    confirm: 'Ja, zurückziehen',
    confirmOneButton: (email: string) => `Ja, für ${email} zurückziehen`,
    cancel: 'Abbrechen',
    working: 'Wird zurückgezogen…',
    needReason: 'Bitte geben Sie einen Grund an.',
    doneEveryone: 'Die Nachricht wurde für alle zurückgezogen.',
    doneOne: (email: string) => `Die Nachricht wurde für ${email} zurückgezogen.`,
  },

  endDate: {
    title: 'Ablaufdatum ändern',
    explain: 'Nach diesem Zeitpunkt kann die Nachricht nicht mehr gelesen werden, und ihr Inhalt wird gelöscht.',
    label: 'Neues Ablaufdatum und Uhrzeit',
    hint: (zone: string) => `In Ihrer Zeitzone (${zone}).`,
    save: 'Ablaufdatum speichern',
    saving: 'Wird gespeichert…',
    saved: (date: string) => `Die Nachricht läuft jetzt am ${date} ab.`,
    invalid: 'Bitte geben Sie ein Datum und eine Uhrzeit ein.',
    refused: 'Das Ablaufdatum wurde nicht angenommen.',
    serverSaid: (message: string) => `Der Dienst meldet: ${message}`,
  },

  signOut: 'Abmelden',
  signingOut: 'Wird abgemeldet…',
  signOutFailed: 'Sie sind noch angemeldet: Das Abmelden hat nicht funktioniert.',

  signedOut: {
    title: 'Sie sind abgemeldet',
    body: 'Ihre Sitzung auf diesem Gerät ist beendet.',
    again: 'Erneut anmelden',
  },

  fatal: {
    title: 'Diese Seite kann nicht angezeigt werden',
    retry: 'Erneut versuchen',
  },

  sessionEnded: 'Ihre Sitzung ist abgelaufen. Bitte melden Sie sich erneut an.',

  units: reader.units,
  errors: {
    ...reader.errors,
    invalid_code_or_email:
      'Dieser Code stimmt nicht. Bitte prüfen Sie die Ziffern in der neuesten E-Mail von uns, ' +
      'oder fordern Sie einen neuen Code an.',
    unauthorized_user:
      'Mit dieser Adresse können Sie sich hier nicht anmelden. ' +
      'Bitte verwenden Sie die Adresse, von der Sie versiegelte Nachrichten senden.',
    not_found: 'Diese Nachricht gibt es nicht, oder sie wurde nicht von Ihrer Adresse gesendet.',
    message_withdrawn: 'Diese Nachricht wurde zurückgezogen: Sie kann nicht mehr geändert werden.',
    message_expired: 'Diese Nachricht ist abgelaufen: Sie kann nicht mehr geändert werden.',
    mobile_required: 'Ein Empfänger hat keine Mobilnummer, und diese Organisation verlangt eine.',
  },
  errorFallback: reader.errorFallback,
} satisfies SenderTexts;
