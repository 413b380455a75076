/*
 * pvm_packf and pvm_unpackf: PVM's printf-like packing, in C because its
 * arguments are C's variable arguments, which stable Rust cannot receive.
 * Each conversion calls the library's own pvm_pk* or pvm_upk* function.
 * The library exports only what Rust defines, so the exported pvm_packf
 * and pvm_unpackf are Rust's naked jumps to these (src/packf.rs).
 *
 * Format (pvm_packf(3PVM)):
 *   format : { '%' '+' | '%' count stride modifiers fchar | other }
 *   count  : empty | digits | '*'      stride : empty | '.' (digits | '*')
 *   modifiers : any of 'h' 'l' 'u'     fchar : 'c' 'd' 'f' 'x' 's'
 * "%+" takes an int, the encoding of a new send buffer. With neither count
 * nor stride, pvm_packf takes the value itself (promoted as C promotes
 * variable arguments); with either, a pointer to the first element.
 * pvm_unpackf always takes pointers. Characters outside conversions are
 * skipped. An unknown conversion is PvmBadParam.
 */
#include <stdarg.h>
#include <stddef.h>

int pvm_initsend(int);
int pvm_pkbyte(char *, int, int);
int pvm_pkshort(short *, int, int);
int pvm_pkushort(unsigned short *, int, int);
int pvm_pkint(int *, int, int);
int pvm_pkuint(unsigned int *, int, int);
int pvm_pklong(long *, int, int);
int pvm_pkulong(unsigned long *, int, int);
int pvm_pkfloat(float *, int, int);
int pvm_pkdouble(double *, int, int);
int pvm_pkcplx(float *, int, int);
int pvm_pkdcplx(double *, int, int);
int pvm_pkstr(char *);
int pvm_upkbyte(char *, int, int);
int pvm_upkshort(short *, int, int);
int pvm_upkushort(unsigned short *, int, int);
int pvm_upkint(int *, int, int);
int pvm_upkuint(unsigned int *, int, int);
int pvm_upklong(long *, int, int);
int pvm_upkulong(unsigned long *, int, int);
int pvm_upkfloat(float *, int, int);
int pvm_upkdouble(double *, int, int);
int pvm_upkcplx(float *, int, int);
int pvm_upkdcplx(double *, int, int);
int pvm_upkstr(char *);

#define PVM_BAD_PARAM (-2)

/* One parsed conversion. */
struct conv {
	char fchar;
	int count, stride, addressed;
	int h, l, u;
};

/* Parses the conversion after a '%' at *fmt; returns 0 or PvmBadParam. */
static int parse(const char **fmt, va_list *ap, struct conv *c)
{
	const char *f = *fmt;
	c->count = 1;
	c->stride = 1;
	c->addressed = 0;
	c->h = c->l = c->u = 0;
	if (*f == '*') {
		c->count = va_arg(*ap, int);
		c->addressed = 1;
		f++;
	} else if (*f >= '0' && *f <= '9') {
		c->count = 0;
		while (*f >= '0' && *f <= '9')
			c->count = c->count * 10 + (*f++ - '0');
		c->addressed = 1;
	}
	if (*f == '.') {
		f++;
		c->addressed = 1;
		if (*f == '*') {
			c->stride = va_arg(*ap, int);
			f++;
		} else {
			c->stride = 0;
			while (*f >= '0' && *f <= '9')
				c->stride = c->stride * 10 + (*f++ - '0');
		}
	}
	for (;; f++) {
		if (*f == 'h')
			c->h = 1;
		else if (*f == 'l')
			c->l = 1;
		else if (*f == 'u')
			c->u = 1;
		else
			break;
	}
	c->fchar = *f;
	if (*f)
		f++;
	*fmt = f;
	switch (c->fchar) {
	case 'c': case 'd': case 'f': case 'x': case 's':
		return 0;
	default:
		return PVM_BAD_PARAM;
	}
}

/* Packs one conversion whose data is at p. */
static int pack_at(const struct conv *c, void *p)
{
	switch (c->fchar) {
	case 'c': return pvm_pkbyte(p, c->count, c->stride);
	case 'd':
		if (c->h)
			return c->u ? pvm_pkushort(p, c->count, c->stride) : pvm_pkshort(p, c->count, c->stride);
		if (c->l)
			return c->u ? pvm_pkulong(p, c->count, c->stride) : pvm_pklong(p, c->count, c->stride);
		return c->u ? pvm_pkuint(p, c->count, c->stride) : pvm_pkint(p, c->count, c->stride);
	case 'f': return c->l ? pvm_pkdouble(p, c->count, c->stride) : pvm_pkfloat(p, c->count, c->stride);
	case 'x': return c->l ? pvm_pkdcplx(p, c->count, c->stride) : pvm_pkcplx(p, c->count, c->stride);
	default: return pvm_pkstr(p);
	}
}

static int unpack_at(const struct conv *c, void *p)
{
	switch (c->fchar) {
	case 'c': return pvm_upkbyte(p, c->count, c->stride);
	case 'd':
		if (c->h)
			return c->u ? pvm_upkushort(p, c->count, c->stride) : pvm_upkshort(p, c->count, c->stride);
		if (c->l)
			return c->u ? pvm_upkulong(p, c->count, c->stride) : pvm_upklong(p, c->count, c->stride);
		return c->u ? pvm_upkuint(p, c->count, c->stride) : pvm_upkint(p, c->count, c->stride);
	case 'f': return c->l ? pvm_upkdouble(p, c->count, c->stride) : pvm_upkfloat(p, c->count, c->stride);
	case 'x': return c->l ? pvm_upkdcplx(p, c->count, c->stride) : pvm_upkcplx(p, c->count, c->stride);
	default: return pvm_upkstr(p);
	}
}

/* Packs one value passed by value. */
static int pack_value(const struct conv *c, va_list *ap)
{
	switch (c->fchar) {
	case 'c': { char v = (char)va_arg(*ap, int); return pvm_pkbyte(&v, 1, 1); }
	case 'd':
		if (c->h) { short v = (short)va_arg(*ap, int); return pvm_pkshort(&v, 1, 1); }
		if (c->l) { long v = va_arg(*ap, long); return pvm_pklong(&v, 1, 1); }
		{ int v = va_arg(*ap, int); return pvm_pkint(&v, 1, 1); }
	case 'f':
		if (c->l) { double v = va_arg(*ap, double); return pvm_pkdouble(&v, 1, 1); }
		{ float v = (float)va_arg(*ap, double); return pvm_pkfloat(&v, 1, 1); }
	case 's': return pvm_pkstr(va_arg(*ap, char *));
	default: return pack_at(c, va_arg(*ap, void *)); /* complex: by address */
	}
}

static int packf(const char *fmt, va_list *ap)
{
	int cc;
	struct conv c;
	if (fmt == NULL)
		return PVM_BAD_PARAM;
	while (*fmt) {
		if (*fmt++ != '%')
			continue;
		if (*fmt == '+') {
			fmt++;
			if ((cc = pvm_initsend(va_arg(*ap, int))) < 0)
				return cc;
			continue;
		}
		if ((cc = parse(&fmt, ap, &c)) < 0)
			return cc;
		cc = c.addressed ? pack_at(&c, va_arg(*ap, void *)) : pack_value(&c, ap);
		if (cc < 0)
			return cc;
	}
	return 0;
}

static int unpackf(const char *fmt, va_list *ap)
{
	int cc;
	struct conv c;
	if (fmt == NULL)
		return PVM_BAD_PARAM;
	while (*fmt) {
		if (*fmt++ != '%')
			continue;
		if ((cc = parse(&fmt, ap, &c)) < 0)
			return cc;
		if ((cc = unpack_at(&c, va_arg(*ap, void *))) < 0)
			return cc;
	}
	return 0;
}

int threadwire_pvm_packf(const char *fmt, ...)
{
	va_list ap;
	int cc;
	va_start(ap, fmt);
	cc = packf(fmt, &ap);
	va_end(ap);
	return cc;
}

int threadwire_pvm_unpackf(const char *fmt, ...)
{
	va_list ap;
	int cc;
	va_start(ap, fmt);
	cc = unpackf(fmt, &ap);
	va_end(ap);
	return cc;
}
