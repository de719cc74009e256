/* Internal to the plugin layer: the search path's layout, which plugin_search.c builds
 * and plugin_loader.c walks when it scans for modules. */
#ifndef INTRUS_PLUGIN_SEARCH_H
#define INTRUS_PLUGIN_SEARCH_H

/* The directories in search order, each once (intrus_plugin_search_add). */
struct intrus_plugin_search {
  char **dirs;
  int n, cap;
};

#endif
