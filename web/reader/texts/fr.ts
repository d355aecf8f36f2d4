import { decimalComma } from './decimal.ts';
import type { Texts } from './en.ts';

/**
 * The reader page in French, formal (vous), in the tone of the code emails (src/auth/mail/texts/fr.ts).
 * A no-break space (U+00A0) goes before ":" as French typography wants, so a colon never starts a line.
 */
export const fr = {
  lang: 'fr',
  appName: 'Sealpost',
  loading: 'Chargement…',
  skipToContent: 'Aller au contenu',
  language: 'Langue',

  signIn: {
    title: 'Lire votre message scellé',
    from: 'De',
    subject: 'Objet',
    noSubject: '(sans objet)',
    introSms:
      'Pour le lire, confirmez qu’il vous est destiné : ' +
      'saisissez votre adresse e-mail et votre numéro de mobile. ' +
      'Nous vous enverrons un code à usage unique par SMS.',
    introEmail:
      'Pour le lire, confirmez qu’il vous est destiné : saisissez votre adresse e-mail. ' +
      'Nous vous enverrons un code à usage unique par e-mail.',
    introBoth:
      'Pour le lire, confirmez qu’il vous est destiné : ' +
      'saisissez votre adresse e-mail, et votre numéro de mobile si l’expéditeur le connaît. ' +
      'Nous vous enverrons un code à usage unique.',
    email: 'Adresse e-mail',
    emailHint: 'L’adresse à laquelle ce message a été envoyé.',
    mobile: 'Numéro de mobile',
    mobileOptional: 'Numéro de mobile (si l’expéditeur le connaît)',
    mobileHint: 'Au format international, par exemple +41 79 123 45 67.',
    send: 'M’envoyer un code',
    sending: 'Envoi…',
  },

  code: {
    title: 'Saisissez votre code',
    sentSms: (length: number, to: string) => `Nous avons envoyé un code à ${length} chiffres par SMS au ${to}.`,
    sentEmail: (length: number, to: string) => `Nous avons envoyé un code à ${length} chiffres par e-mail à ${to}.`,
    validFor: (duration: string) => `Le code est valable ${duration}.`,
    label: 'Code',
    remember: 'Rester connecté sur cet appareil',
    rememberHint: (duration: string) =>
      `Pendant ${duration}, ou jusqu’à ce que vous vous déconnectiez. ` +
      'Ne cochez pas cette case sur un ordinateur partagé.',
    submit: 'Se connecter',
    checking: 'Vérification…',
    resend: 'Envoyer un nouveau code',
    resendIn: (duration: string) => `Vous pourrez demander un nouveau code dans ${duration}.`,
    resent: 'Un nouveau code est en route. L’ancien ne fonctionne plus.',
    otherAddress: 'Utiliser une autre adresse',
    sentEarlierSms: (to: string, time: string) => `Nous vous avons envoyé un code par SMS au ${to} à ${time}.`,
    sentEarlierEmail: (to: string, time: string) => `Nous vous avons envoyé un code par e-mail à ${to} à ${time}.`,
    stillValidFor: (duration: string) => `Il est encore valable ${duration}.`,
    attemptsLeft: (n: number) => (n === 1 ? 'Il vous reste 1 essai.' : `Il vous reste ${n} essais.`),
  },

  message: {
    from: 'De',
    to: 'À',
    cc: 'Cc',
    replyTo: 'Répondre à',
    date: 'Date',
    noSubject: '(sans objet)',
    sealedOn: (date: string, cid: string) => `Scellé le ${date} — contenu vérifié avec le CID IPFS ${cid}.`,
    sealTitle: 'Le sceau est intact',
    sealExplain:
      'Ce message est exactement tel qu’il a été scellé : son empreinte (SHA-256) correspond à la copie scellée.',
    sha256: 'SHA-256',
    bodyFrame: 'Texte du message',
    noBody: 'Ce message n’a pas de texte.',
    remoteImagesBlocked: (count: number) =>
      count === 1
        ? 'Une image provenant d’Internet n’est pas affichée, ' +
          'afin que l’expéditeur ne puisse pas savoir quand vous lisez ce message.'
        : `${count} images provenant d’Internet ne sont pas affichées, ` +
          'afin que l’expéditeur ne puisse pas savoir quand vous lisez ce message.',
    showImages: 'Afficher les images',
    attachments: 'Pièces jointes',
    download: 'Télécharger',
    signOut: 'Se déconnecter',
    signingOut: 'Déconnexion…',
    signOutFailed: 'Vous êtes toujours connecté : la déconnexion n’a pas fonctionné.',
  },

  mobile: {
    title: 'Changer votre numéro de mobile',
    explain:
      'Les codes pour ce message sont envoyés à votre numéro de mobile. ' +
      'Pour le changer, confirmez un code envoyé à votre numéro actuel, puis un code envoyé au nouveau numéro.',
    newNumber: 'Nouveau numéro de mobile',
    newNumberHint: 'Au format international, par exemple +41 79 123 45 67.',
    start: 'Envoyer un code à mon numéro actuel',
    starting: 'Envoi…',
    codeTo: (to: string) => `Saisissez le code que nous avons envoyé au ${to}.`,
    code: 'Code',
    confirm: 'Confirmer',
    confirming: 'Vérification…',
    changed: (to: string) =>
      `Votre numéro de mobile est désormais le ${to}. ` +
      'Votre ancien numéro et votre adresse e-mail ont été prévenus.',
  },

  laterMobile: {
    title: 'Protéger vos prochains messages par SMS',
    explain:
      'Vous vous êtes connecté avec un code reçu par e-mail. Quiconque lit votre boîte pourrait en faire autant. ' +
      'Ajoutez votre numéro de mobile : les codes des messages scellés que cette organisation vous enverra ' +
      'désormais arriveront par SMS. Ce message-ci garde la connexion par e-mail.',
    number: 'Numéro de mobile',
    numberHint: 'Au format international, par exemple +41 79 123 45 67.',
    start: 'Envoyer un code à ce numéro',
    starting: 'Envoi…',
    codeTo: (to: string) => `Saisissez le code envoyé au ${to}.`,
    code: 'Code',
    confirm: 'Ajouter ce numéro',
    confirming: 'Vérification…',
    added: (to: string) =>
      `C’est fait : les codes de vos prochains messages iront au ${to}. Votre adresse e-mail a été prévenue.`,
  },

  others: {
    title: 'Vos autres messages scellés',
    explain: 'Vous pouvez les ouvrir sans nouveau code.',
    meta: (sender: string, date: string) => `de ${sender}, scellé le ${date}`,
  },

  list: {
    previous: 'Messages précédents',
    next: 'Messages suivants',
    range: (from: number, to: number) => `Messages ${from} à ${to}`,
    navigation: 'Pages de vos autres messages',
  },

  reply: {
    title: 'Répondre',
    to: (to: string) => `Votre réponse sera envoyée à ${to}.`,
    text: 'Votre réponse',
    draftSaved: 'Brouillon enregistré. Vous pourrez continuer plus tard, y compris sur un autre appareil.',
    draftSaving: 'Enregistrement du brouillon…',
    draftRestored: 'Votre brouillon non envoyé a été restauré.',
    draftFailed:
      'Votre réponse enregistrée n’a pas pu être chargée. ' +
      'Pour que rien ne s’en perde, vous pourrez répondre dès qu’elle sera chargée.',
    retry: 'Réessayer',
    files: 'Fichiers joints',
    addFiles: 'Joindre des fichiers',
    limits: (perFile: string, total: string) => `Jusqu’à ${perFile} par fichier et ${total} au total.`,
    used: (used: string, total: string) => `${used} utilisés sur ${total}.`,
    uploading: (name: string) => `Envoi de ${name}`,
    uploaded: (name: string) => `${name} est joint.`,
    remove: (name: string) => `Retirer ${name}`,
    removed: (name: string) => `${name} a été retiré.`,
    copyToMe: (email: string) => `M’envoyer une copie (à ${email})`,
    send: 'Envoyer la réponse',
    sending: 'Envoi…',
    empty: 'Veuillez d’abord écrire une réponse ou joindre un fichier.',
    waitForUploads: 'Veuillez attendre que les fichiers soient envoyés.',
  },

  drafts: {
    conflictTitle: 'Cette réponse a aussi été modifiée dans une autre fenêtre',
    conflictExplain: 'Rien n’est perdu. Choisissez le texte à garder ; vous pourrez encore le modifier avant l’envoi.',
    mine: 'Écrit dans cette fenêtre',
    theirs: 'Enregistré dans l’autre fenêtre',
    keepMine: 'Garder le texte de cette fenêtre',
    keepTheirs: 'Garder le texte de l’autre fenêtre',
    keepBoth: 'Garder les deux textes, l’un après l’autre',
    chosen: 'Le texte choisi est dans votre réponse et il est en cours d’enregistrement.',
    updated: 'Cette réponse a été modifiée dans une autre fenêtre ; le texte ici est celui qui y a été enregistré.',
    checkAgain: 'Cette réponse a été modifiée dans une autre fenêtre. Vérifiez-la, puis envoyez-la à nouveau.',
    alreadySentTitle: 'Votre réponse a déjà été envoyée',
    alreadySent: (time: string) => `Votre réponse a déjà été envoyée le ${time}.`,
    alreadySentExplain:
      'Elle a été envoyée depuis une autre fenêtre ou un autre appareil. ' +
      'Ce que vous avez écrit ici n’a pas été envoyé.',
    unsent: 'Écrit dans cette fenêtre, non envoyé',
    newReply: 'Commencer une nouvelle réponse avec ce texte',
    writeReply: 'Écrire une nouvelle réponse',
    lastSent: (time: string) => `Votre dernière réponse à ce message a été envoyée le ${time}.`,
  },

  sent: {
    title: 'Votre réponse a été envoyée',
    body: (to: string) => `Votre réponse est en route vers ${to}.`,
    back: 'Retour au message',
  },

  signedOut: {
    title: 'Vous êtes déconnecté',
    body: 'Votre session sur cet appareil est terminée. Pour relire le message, connectez-vous avec un nouveau code.',
    again: 'Se reconnecter',
  },

  sessions: {
    signOutEverywhere: 'Se déconnecter partout',
    signingOutEverywhere: 'Déconnexion partout…',
    signOutEverywhereFailed: 'Vous êtes toujours connecté : la déconnexion partout n’a pas fonctionné.',
    signedOutEverywhere: {
      title: 'Vous êtes déconnecté partout',
      body:
        'Toutes vos sessions sont terminées : sur cet appareil, dans d’autres navigateurs et pour vos autres ' +
        'messages. Pour relire un message, connectez-vous avec un nouveau code.',
    },
  },

  brokenSeal: {
    title: 'Le sceau est brisé',
    body:
      'Ce message n’est pas affiché : son contenu ne correspond plus à ce qui a été scellé. ' +
      'Il a peut-être été modifié après avoir été scellé.',
    cid: (cid: string) => `Contenu scellé : CID IPFS ${cid}`,
    copy: (cluster: string, state: string) => `La copie sur ${cluster} : ${state}`,
    copyStates: { damaged: 'endommagée', missing: 'absente', unreachable: 'injoignable' },
    advice: 'Ne vous fiez à aucune copie de ce message. Prévenez l’expéditeur et donnez-lui la référence ci-dessous.',
  },

  ended: {
    withdrawnTitle: 'Ce message a été retiré',
    expiredTitle: 'Ce message a expiré',
    withdrawnOn: (date: string) => `Ce message a été retiré le ${date}.`,
    expiredOn: (date: string) => `Ce message a expiré le ${date}.`,
    gone: 'Son contenu n’est plus disponible : il ne peut plus être lu ni recevoir de réponse.',
    ask: (contact: string) => `Adressez-vous à ${contact} si vous en avez besoin.`,
    askSender: 'Adressez-vous à son expéditeur si vous en avez besoin.',
  },

  fatal: {
    title: 'Ce message ne peut pas être affiché',
    badLink: 'Ce lien est incomplet. Veuillez rouvrir le lien de votre e-mail.',
    retry: 'Réessayer',
  },

  sessionEnded: 'Votre session a expiré. Veuillez vous reconnecter.',

  units: {
    bytes: (n: number) => (n === 1 ? '1 octet' : `${n} octets`),
    kb: (n: string) => `${decimalComma(n)} Ko`,
    mb: (n: string) => `${decimalComma(n)} Mo`,
    gb: (n: string) => `${decimalComma(n)} Go`,
    seconds: (n: number) => (n === 1 ? '1 seconde' : `${n} secondes`),
    minutes: (n: number) => (n === 1 ? '1 minute' : `${n} minutes`),
    hours: (n: number) => (n === 1 ? '1 heure' : `${n} heures`),
    days: (n: number) => (n === 1 ? '1 jour' : `${n} jours`),
  },

  errors: {
    expired_code: 'Ce code a expiré. Veuillez demander un nouveau code et saisir celui-ci.',
    incorrect_code:
      'Ce code n’est pas le bon. Veuillez vérifier les chiffres et réessayer — ou demander un nouveau code.',
    invalid_code_or_email:
      'Ce code n’est pas le bon. ' +
      'Veuillez vérifier les chiffres dans le dernier e-mail que nous vous avons envoyé, ' +
      'ou demander un nouveau code.',
    invalid_email: 'Veuillez saisir une adresse e-mail complète, comme nom@example.com.',
    invalid_mobile:
      'Veuillez saisir votre numéro de mobile au format international, ' +
      'en commençant par + et l’indicatif du pays, comme +41 79 123 45 67.',
    invalid_bcc_address: 'L’adresse pour votre copie n’est pas une adresse e-mail valide.',
    email_mismatch:
      'Une copie de la réponse ne peut aller qu’à votre propre adresse, ' +
      'celle avec laquelle vous vous êtes connecté.',
    unauthorized_user:
      'Ce message n’a pas été envoyé à cette adresse ou à ce numéro de mobile. ' +
      'Veuillez les vérifier, ou demandez à l’expéditeur.',
    forbidden_auth_method:
      'Cette adresse se connecte d’une autre manière. ' +
      'Veuillez vérifier si l’expéditeur connaît votre numéro de mobile.',
    forbidden_file_type:
      'Ce type de fichier ne peut pas être joint (par exemple les programmes et les scripts). ' +
      'Veuillez plutôt joindre un document ou une image.',
    malware_detected: 'Ce fichier semble contenir un virus, il n’a donc pas été joint.',
    file_too_large: 'Ce fichier est trop volumineux pour être joint.',
    upload_limit_reached:
      'Avec les fichiers déjà joints, ce fichier est trop volumineux. Retirez un fichier ou envoyez-en moins.',
    new_mobile_conflict: 'C’est déjà votre numéro de mobile.',
    sms_rate_limit: 'Trop de codes ont été demandés. Veuillez patienter un peu avant d’en demander un nouveau.',
    email_and_mobile_mismatch:
      'Cette adresse e-mail et ce numéro de mobile ne vont pas ensemble. Veuillez vérifier les deux.',
    code_replaced:
      'Un code plus récent a remplacé celui-ci, qui ne fonctionne plus. Veuillez saisir le code du dernier message ; ' +
      'aucun essai n’a été utilisé.',
    code_attempts_exceeded:
      'Ce code ne peut plus être utilisé : il a été mal saisi trop de fois. Veuillez en demander un nouveau.',
    message_withdrawn: 'Ce message a été retiré par son expéditeur : il ne peut plus être lu.',
    message_expired: 'Ce message a dépassé sa date de fin : il ne peut plus être lu.',
    mobile_required: 'Un numéro de mobile est nécessaire pour protéger ce message.',
    seal_broken: 'Le sceau est brisé : ce message ne correspond plus à ce qui a été scellé, il n’est donc pas affiché.',
    validation_failed: 'Un élément du formulaire n’est pas rempli correctement. Veuillez le vérifier et réessayer.',
    not_found:
      'Ce message n’existe pas ou n’est plus disponible. Veuillez vérifier le lien, ou demandez à l’expéditeur.',
    unauthenticated: 'Votre session a expiré. Veuillez vous reconnecter.',
    forbidden: 'Ce n’est pas autorisé.',
    csrf_token_invalid: 'Cette page est restée ouverte longtemps. Veuillez la recharger et réessayer.',
    conflict: 'Quelque chose a changé entre-temps. Veuillez recharger la page et réessayer.',
    draft_conflict:
      'Cette réponse a été modifiée dans une autre fenêtre ou sur un autre appareil. ' +
      'Elle doit être rechargée avant de pouvoir être modifiée ou envoyée.',
    reply_already_sent: 'Cette réponse a déjà été envoyée depuis une autre fenêtre ou un autre appareil.',
    payload_too_large: 'C’est trop volumineux pour être envoyé.',
    unavailable: 'Le service est très sollicité en ce moment. Veuillez réessayer dans une minute.',
    upstream_failed: 'Le message ne peut pas être récupéré pour le moment. Veuillez réessayer dans quelques minutes.',
    internal: 'Une erreur s’est produite de notre côté. Veuillez réessayer plus tard.',
  },

  codeState: {
    waitForNew: (duration: string) =>
      `Un code vient d’être envoyé et reste valable. Vous pourrez en demander un nouveau dans ${duration}.`,
  },

  errorFallback: {
    network: 'Pas de connexion au serveur. Veuillez vérifier votre connexion Internet et réessayer.',
    status: (status: number) =>
      status >= 500
        ? 'Une erreur s’est produite de notre côté. Veuillez réessayer plus tard.'
        : 'Cela n’a pas fonctionné. Veuillez réessayer.',
    retryIn: (duration: string) => `Veuillez réessayer dans ${duration}.`,
    reference: (id: string) => `Référence : ${id}`,
  },

  methodHint: {
    needsMobile:
      'Pour cette adresse, le code arrive par SMS. ' +
      'Veuillez saisir le numéro de mobile que l’expéditeur a pour vous.',
    needsEmail: 'Pour cette adresse, le code arrive par e-mail. Veuillez laisser le numéro de mobile vide.',
  },
} satisfies Texts;
