/*
 * Bad input to threadwire's libpvm3 gets PVM's documented error codes,
 * never a crash; then packing, pvm_packf and receives work on messages
 * the task sends itself. Prints "errors passed" when every check holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "pvm3.h"
#include "expect.h"


int main(void)
{
	int me, a[4] = {1, 2, 3, 4}, b[4] = {0}, buf, bytes, tag, src, n;
	double d = 0;
	char s[32];
	struct timeval zero = {0, 0}, short_wait = {0, 20000};

	/* No failed call may print: the test reads stderr for failures. */
	pvm_setopt(PvmAutoErr, 0);
	/* Before any buffer exists. */
	EXPECT(pvm_upkint(b, 1, 1), PvmNoBuf);
	EXPECT(pvm_pkint(a, 1, 1), PvmNoBuf);
	me = pvm_mytid();
	if (me <= 0) {
		fprintf(stderr, "FAILED pvm_mytid = %d\n", me);
		return 1;
	}
	/* Invalid tids, tags, lengths and encodings. */
	EXPECT(pvm_initsend(99), PvmBadParam);
	buf = pvm_initsend(PvmDataDefault);
	EXPECT(pvm_send(0, 1), PvmBadParam);
	EXPECT(pvm_send(-5, 1), PvmBadParam);
	EXPECT(pvm_send(0x7fffffff, 1), PvmBadParam);
	EXPECT(pvm_send(me, -3), PvmBadParam);
	EXPECT(pvm_pkint(a, -1, 1), PvmBadParam);
	EXPECT(pvm_pkint(a, 2, 0), PvmBadParam);
	EXPECT(pvm_pkint(NULL, 2, 1), PvmBadParam);
	EXPECT(pvm_pkstr(NULL), PvmBadParam);
	EXPECT(pvm_recv(-7, -1), PvmBadParam);
	EXPECT(pvm_bufinfo(12345, &bytes, &tag, &src), PvmNoSuchBuf);
	EXPECT(pvm_freebuf(-1), PvmBadParam);
	EXPECT(pvm_setsbuf(777), PvmNoSuchBuf);
	EXPECT(pvm_joingroup(""), PvmNullGroup);
	EXPECT(pvm_gsize("no such group"), PvmNoGroup);
	EXPECT(pvm_lvgroup("no such group"), PvmNoGroup);
	EXPECT(pvm_parent(), PvmNoParent);
	EXPECT(pvm_kill(0), PvmBadParam);

	/* A message to itself: ints, a string, a double. */
	EXPECT(pvm_pkint(a, 4, 1), 0);
	EXPECT(pvm_pkstr("grüße"), 0);
	EXPECT(pvm_pkdouble(&(double){2.5}, 1, 1), 0);
	EXPECT(pvm_send(me, 7), 0);
	EXPECT(pvm_nrecv(me, 8), 0);              /* other tag: nothing */
	EXPECT(pvm_trecv(-1, 8, &short_wait), 0); /* and after a wait */
	buf = pvm_recv(-1, 7);
	EXPECT(buf > 0, 1);
	EXPECT(pvm_bufinfo(buf, &bytes, &tag, &src), 0);
	EXPECT(tag, 7);
	EXPECT(src, me);
	/* Unpacked in other groupings, wrong types refused, nothing lost. */
	EXPECT(pvm_upkint(b, 1, 1), 0);
	EXPECT(pvm_upkdouble(&d, 1, 1), PvmBadMsg);
	EXPECT(pvm_upkint(b + 1, 3, 1), 0);
	EXPECT(memcmp(a, b, sizeof a), 0);
	EXPECT(pvm_upkint(b, 1, 1), PvmBadMsg); /* a string is next */
	EXPECT(pvm_upkstr(s), 0);
	EXPECT(strcmp(s, "grüße"), 0);
	EXPECT(pvm_upkdouble(&d, 1, 1), 0);
	EXPECT(d == 2.5, 1);
	EXPECT(pvm_upkdouble(&d, 1, 1), PvmNoData); /* past the end */
	/* A freed buffer is gone. */
	EXPECT(pvm_freebuf(buf), 0);
	EXPECT(pvm_upkint(b, 1, 1), PvmNoBuf);
	EXPECT(pvm_bufinfo(buf, &bytes, &tag, &src), PvmNoSuchBuf);

	/* pvm_packf and pvm_unpackf: values, arrays with strides, strings. */
	{
		int arr[6] = {10, 0, 20, 0, 30, 0}, out[3] = {0}, x = 0;
		short h = 0;
		double lf = 0;
		char str[16];
		EXPECT(pvm_packf("%+ %d %hd %lf %3.2d %s", PvmDataRaw, 42, (short)-7, 0.25, arr, "ok"), 0);
		EXPECT(pvm_send(me, 9), 0);
		EXPECT(pvm_recv(me, 9) > 0, 1);
		EXPECT(pvm_unpackf("%d %hd %lf %3d %s", &x, &h, &lf, out, str), 0);
		EXPECT(x, 42);
		EXPECT(h, -7);
		EXPECT(lf == 0.25, 1);
		EXPECT(out[0] + out[1] + out[2], 60);
		EXPECT(strcmp(str, "ok"), 0);
		EXPECT(pvm_packf("%q", 1), PvmBadParam);
	}

	/* pvm_psend and pvm_precv. */
	{
		double v[3] = {1, 2, 3}, w[3] = {0};
		int rtid, rtag, rlen;
		EXPECT(pvm_psend(me, 11, v, 3, PVM_DOUBLE), 0);
		EXPECT(pvm_precv(me, 11, w, 3, PVM_DOUBLE, &rtid, &rtag, &rlen), 0);
		EXPECT(rtid, me);
		EXPECT(rtag, 11);
		EXPECT(rlen, 3);
		EXPECT(w[2] == 3, 1);
		EXPECT(pvm_psend(me, 11, v, 3, 99), PvmBadParam);
	}

	/* Probe leaves the message; a zero timeout polls. */
	pvm_initsend(PvmDataDefault);
	pvm_send(me, 12);
	n = pvm_probe(-1, 12);
	EXPECT(n > 0, 1);
	EXPECT(pvm_trecv(-1, 12, &zero), n);
	EXPECT(pvm_probe(-1, 12), 0);

	pvm_exit();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("errors passed\n");
	return 0;
}
