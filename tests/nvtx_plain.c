/* nvtx_plain: NVTX calls and nothing else (no strobe). test_nvtx.sh runs it with
 * NVTX_INJECTION64_PATH naming libstrobe.so and no session: it must run as it does without, and
 * print what NVTX returned. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        nvtxRangePushA("plain");
        nvtxMarkA("m");
        nvtxRangePop();
    }
    return NULL;
}

int main(void) {
    nvtxDomainHandle_t d = nvtxDomainCreateA("plain-domain");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    int l0 = nvtxDomainRangePushEx(d, &a);
    int l1 = nvtxRangePushW(L"w");
    nvtxRangeId_t id = nvtxRangeStartA("start");
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    nvtxRangeEnd(id);
    int p1 = nvtxRangePop();
    int p0 = nvtxDomainRangePop(d);
    nvtxDomainDestroy(d);
    printf("levels %d %d %d %d\n", l0, l1, p1, p0);
    return 0;
}
