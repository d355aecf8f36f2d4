import { fr as reader } from '../../texts/fr.ts';
import type { SenderTexts } from './en.ts';

/** The sender's page in French (vous), as the reader page. */
export const fr = {
  lang: 'fr',
  appName: 'Sealpost',
  loading: 'Chargement…',
  skipToContent: 'Aller au contenu',
  language: 'Langue',

  signIn: {
    title: 'Vos messages scellés',
    intro:
      'Voyez qui a reçu et lu les messages que vous avez scellés, retirez-les ou changez leur date de fin. ' +
      'Connectez-vous avec un code à usage unique envoyé à votre adresse e-mail.',
    email: 'Votre adresse e-mail',
    emailHint: "L'adresse depuis laquelle vous envoyez des messages scellés.",
    send: 'Envoyez-moi un code',
    sending: 'Envoi…',
  },

  code: {
    title: 'Saisissez votre code',
    sent: (length: number, to: string) =>
      `Si ${to} peut se connecter ici, nous lui avons envoyé un code à ${length} chiffres par e-mail.`,
    validFor: (duration: string) => `Le code est valable ${duration}.`,
    label: 'Code',
    submit: 'Se connecter',
    checking: 'Vérification…',
    resend: 'Envoyer un nouveau code',
    resendIn: (duration: string) => `Vous pourrez demander un nouveau code dans ${duration}.`,
    resent: "Un nouveau code est en route. L'ancien ne fonctionne plus.",
    otherAddress: 'Utiliser une autre adresse',
    attemptsLeft: (n: number) => (n === 1 ? 'Il vous reste 1 essai.' : `Il vous reste ${n} essais.`),
    newCode: 'Envoyez-moi un nouveau code',
  },

  list: {
    title: 'Vos messages scellés',
    signedInAs: (sender: string) => `Connecté en tant que ${sender}.`,
    search: 'Rechercher par destinataire ou objet',
    searchButton: 'Rechercher',
    showAll: 'Tout afficher',
    noSubject: '(sans objet)',
    none: "Vous n'avez encore scellé aucun message.",
    noMatch: (query: string) => `Aucun message ne correspond à « ${query} ».`,
    results: (n: number) => (n === 1 ? '1 message affiché.' : `${n} messages affichés.`),
    sealedOn: (date: string) => `Scellé le ${date}`,
    recipients: (n: number) => (n === 1 ? '1 destinataire' : `${n} destinataires`),
    ended: 'Terminé',
    older: 'Afficher les messages plus anciens',
    loadingOlder: 'Chargement…',
  },

  detail: {
    back: 'Retour à la liste',
    noSubject: '(sans objet)',
    sealed: 'Scellé',
    endDate: 'Date de fin',
    noEndDate: "Aucune : il reste lisible jusqu'à ce qu'il soit retiré.",
    withdrawnOn: (date: string) => `Retiré pour tous le ${date}.`,
    expiredOn: (date: string) => `Expiré le ${date}.`,
    recipients: 'Destinataires',
    signIn: 'Connexion',
    signInEmail: 'Avec un code par e-mail (pas de numéro de mobile)',
    signInSms: {
      header: 'Par SMS, au numéro donné par le message',
      confirmed: 'Par SMS, au numéro confirmé par le destinataire',
      directory: 'Par SMS, au numéro de l’annuaire des contacts',
    },
    notified: 'Notifié',
    firstOpened: 'Première ouverture',
    lastOpened: 'Dernière ouverture',
    failedSignIns: 'Connexions échouées',
    downloads: 'Pièces jointes téléchargées',
    replies: 'Réponses envoyées',
    withdrawn: 'Retiré',
    not: 'Pas encore',
    never: 'Jamais',
    trail: 'Journal',
    trailExplain: "Chaque événement de ce message, avec l'heure et l'adresse masquée de l'appareil, dans un fichier.",
    trailCsv: 'Télécharger le journal en CSV',
    trailJson: 'Télécharger le journal en JSON',
  },

  withdraw: {
    title: 'Retirer',
    everyone: 'Retirer pour tous',
    one: (email: string) => `Retirer pour ${email}`,
    confirmEveryone: 'Retirer ce message pour tous ses destinataires ? Personne ne pourra plus le lire ni y répondre.',
    confirmOne: (email: string) =>
      `Retirer ce message pour ${email} ? Cette personne ne pourra plus le lire ni y répondre.`,
    reason: 'Motif',
    reasonHint: 'Conservé dans le registre ; seuls vous et les exploitants le voient.',
    confirm: 'Oui, retirer',
    confirmOneButton: (email: string) => `Oui, retirer pour ${email}`,
    cancel: 'Annuler',
    working: 'Retrait…',
    needReason: 'Veuillez indiquer un motif.',
    doneEveryone: 'Le message a été retiré pour tous.',
    doneOne: (email: string) => `Le message a été retiré pour ${email}.`,
  },

  endDate: {
    title: 'Changer la date de fin',
    explain: 'Après cette date et cette heure, le message ne peut plus être lu et son contenu est supprimé.',
    label: 'Nouvelle date et heure de fin',
    hint: (zone: string) => `Dans votre fuseau horaire (${zone}).`,
    save: 'Enregistrer la date de fin',
    saving: 'Enregistrement…',
    saved: (date: string) => `Le message se termine désormais le ${date}.`,
    invalid: 'Veuillez saisir une date et une heure.',
    refused: "La date de fin n'a pas été acceptée.",
    serverSaid: (message: string) => `Le service indique : ${message}`,
  },

  signOut: 'Se déconnecter',
  signingOut: 'Déconnexion…',
  signOutFailed: "Vous êtes toujours connecté : la déconnexion n'a pas fonctionné.",

  signedOut: {
    title: 'Vous êtes déconnecté',
    body: 'Votre session sur cet appareil est terminée.',
    again: 'Se reconnecter',
  },

  fatal: {
    title: 'Cette page ne peut pas être affichée',
    retry: 'Réessayer',
  },

  sessionEnded: 'Votre session est terminée. Veuillez vous reconnecter.',

  units: reader.units,
  errors: {
    ...reader.errors,
    invalid_code_or_email:
      "Ce code n'est pas correct. Vérifiez les chiffres du dernier e-mail que nous vous avons envoyé, " +
      'ou demandez un nouveau code.',
    unauthorized_user:
      'Cette adresse ne peut pas se connecter ici. ' +
      "Utilisez l'adresse depuis laquelle vous envoyez des messages scellés.",
    not_found: "Ce message n'existe pas, ou il n'a pas été envoyé depuis votre adresse.",
    message_withdrawn: 'Ce message a été retiré : il ne peut plus être modifié.',
    message_expired: 'Ce message a dépassé sa date de fin : il ne peut plus être modifié.',
    mobile_required: 'Un destinataire n’a pas de numéro de mobile, et cette organisation en exige un.',
  },
  errorFallback: reader.errorFallback,
} satisfies SenderTexts;
