// The two demo shops of the browser tests: the example merchant site (docs/examples) for the first
// demo merchant (Cameroon, XAF) and for the second (Côte d'Ivoire, XOF), both on `server`.
import { startMerchantSite } from '../../../docs/examples/merchant-site.mjs';

export async function startDemoShops(server) {
  const [cmr, civ] = server.demo.merchants;
  const cmrSite = await startMerchantSite({ checkoutUrl: server.checkoutUrl, apiKey: cmr.api_key, checkoutSecret: cmr.checkout_secret });
  const civSite = await startMerchantSite({ checkoutUrl: server.checkoutUrl, apiKey: civ.api_key, checkoutSecret: civ.checkout_secret,
    shopName: 'Marché du Plateau', currency: 'XOF' });
  return { cmrSite, civSite };
}
