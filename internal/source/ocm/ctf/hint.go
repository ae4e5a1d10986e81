package ctf

// RepositoryForms says what a repository may be; messages about a path that
// is none of them end with it.
const RepositoryForms = "a repository is a CTF or component archive (directory, tar or tgz), " +
	"an OCI registry (ghcr.io/org/ocm, http://host:5000/ocm) or an OCM repository spec ({type: OCIRegistry, baseUrl: …})"
