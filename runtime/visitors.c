/* SPDX-License-Identifier: MIT */
/* The registry of visitor slots; see visitors.h. */
#include <pthread.h>
#include <sched.h>

#include "visitors.h"

__thread ws_visitor ws__visitor __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ws_visitor *registry;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_rc;

/* Thread exit: the slot leaves the registry before its thread-local
 * storage goes away. A slot is never mid-visit here (a visit is inside
 * one call). */
static void unlist(void *arg) {
  ws_visitor *v = arg;
  pthread_mutex_lock(&registry_lock);
  for (ws_visitor **pp = &registry; *pp; pp = &(*pp)->next) {
    if (*pp == v) {
      *pp = v->next;
      break;
    }
  }
  pthread_mutex_unlock(&registry_lock);
  v->listed = false;
}

static void make_exit_key(void) { exit_key_rc = pthread_key_create(&exit_key, unlist); }

bool ws_visitor_list(void) {
  ws_visitor *v = &ws__visitor;
  if (v->listed) return true;
  pthread_once(&exit_key_once, make_exit_key);
  if (exit_key_rc != 0 || pthread_setspecific(exit_key, v) != 0) return false;
  pthread_mutex_lock(&registry_lock);
  v->next = registry;
  registry = v;
  pthread_mutex_unlock(&registry_lock);
  v->listed = true;
  return true;
}

void ws_visitors_wait(void *pool) {
  pthread_mutex_lock(&registry_lock);
  for (ws_visitor *v = registry; v; v = v->next) {
    /* Acquire: pairs with ws_visit_end's release. */
    while (ws_ptr_load(&v->target, ws_acquire) == pool) sched_yield();
  }
  pthread_mutex_unlock(&registry_lock);
}

void ws_visitors_atfork(int phase) {
  if (phase == 0) {
    pthread_mutex_lock(&registry_lock);
    return;
  }
  if (phase == 2) {
    /* The other slots belong to threads the child does not have. */
    ws_visitor *me = &ws__visitor;
    registry = me->listed ? me : NULL;
    if (me->listed) me->next = NULL;
  }
  pthread_mutex_unlock(&registry_lock);
}
