// Placeholder until the proxy issue lands; the class is declared in server.hpp.
#include "netbox/proxy/server.hpp"
