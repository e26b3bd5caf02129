/**
 * Where the simulated clients are: a fixed table of 80 metropolitan areas with their
 * continent, location (degrees) and a population weight (millions of people, rounded
 * metro-area figures of the mid-2020s; only their ratios within a continent are used).
 * Demand is shared out first per continent (the scenario's `world.demandShare`), then
 * within a continent in proportion to these populations. Nothing here is read from outside
 * the program.
 */

export type Continent = 'north-america' | 'south-america' | 'europe' | 'asia' | 'oceania' | 'africa';

export const CONTINENTS: readonly Continent[] = ['north-america', 'south-america', 'europe', 'asia', 'oceania', 'africa'];

export interface Metro {
  name: string;
  continent: Continent;
  lat: number;
  lon: number;
  /** Millions of people (a weight, not a census figure). */
  pop: number;
}

type Row = [name: string, lat: number, lon: number, pop: number];

const TABLE: Record<Continent, Row[]> = {
  'north-america': [
    ['New York', 40.71, -74.01, 19.5],
    ['Los Angeles', 34.05, -118.24, 13.0],
    ['Chicago', 41.88, -87.63, 9.4],
    ['Dallas', 32.78, -96.8, 7.9],
    ['Houston', 29.76, -95.37, 7.3],
    ['Washington', 38.91, -77.04, 6.4],
    ['Philadelphia', 39.95, -75.17, 6.2],
    ['Miami', 25.76, -80.19, 6.2],
    ['Atlanta', 33.75, -84.39, 6.2],
    ['Boston', 42.36, -71.06, 4.9],
    ['Phoenix', 33.45, -112.07, 5.0],
    ['San Francisco', 37.77, -122.42, 4.7],
    ['Seattle', 47.61, -122.33, 4.0],
    ['Detroit', 42.33, -83.05, 4.3],
    ['Minneapolis', 44.98, -93.27, 3.7],
    ['San Diego', 32.72, -117.16, 3.3],
    ['Denver', 39.74, -104.99, 3.0],
    ['Austin', 30.27, -97.74, 2.4],
    ['San Antonio', 29.42, -98.49, 2.6],
    ['Portland', 45.52, -122.68, 2.5],
    ['Las Vegas', 36.17, -115.14, 2.3],
    ['Salt Lake City', 40.76, -111.89, 1.3],
    ['Toronto', 43.65, -79.38, 6.7],
    ['Montreal', 45.5, -73.57, 4.3],
    ['Vancouver', 49.28, -123.12, 2.6],
    ['Calgary', 51.05, -114.07, 1.6],
    ['Edmonton', 53.55, -113.49, 1.5],
    ['Mexico City', 19.43, -99.13, 22.0],
    ['Guadalajara', 20.66, -103.35, 5.3],
    ['Monterrey', 25.69, -100.32, 5.3],
  ],
  'south-america': [
    ['São Paulo', -23.55, -46.63, 22.4],
    ['Rio de Janeiro', -22.91, -43.17, 13.7],
    ['Buenos Aires', -34.6, -58.38, 15.5],
    ['Lima', -12.05, -77.04, 11.0],
    ['Bogotá', 4.71, -74.07, 11.3],
    ['Santiago', -33.45, -70.67, 6.9],
    ['Caracas', 10.48, -66.9, 2.9],
  ],
  europe: [
    ['London', 51.51, -0.13, 14.8],
    ['Paris', 48.86, 2.35, 11.2],
    ['Madrid', 40.42, -3.7, 6.8],
    ['Barcelona', 41.39, 2.17, 5.6],
    ['Berlin', 52.52, 13.4, 6.1],
    ['Milan', 45.46, 9.19, 4.3],
    ['Rome', 41.9, 12.5, 4.3],
    ['Amsterdam', 52.37, 4.9, 2.5],
    ['Frankfurt', 50.11, 8.68, 2.3],
    ['Munich', 48.14, 11.58, 2.9],
    ['Zurich', 47.38, 8.54, 1.4],
    ['Stockholm', 59.33, 18.07, 2.4],
    ['Warsaw', 52.23, 21.01, 3.1],
    ['Dublin', 53.35, -6.26, 1.5],
    ['Manchester', 53.48, -2.24, 2.8],
    ['Istanbul', 41.01, 28.98, 15.6],
    ['Moscow', 55.76, 37.62, 12.6],
  ],
  asia: [
    ['Tokyo', 35.68, 139.69, 37.2],
    ['Osaka', 34.69, 135.5, 19.0],
    ['Seoul', 37.57, 126.98, 25.5],
    ['Beijing', 39.9, 116.41, 21.5],
    ['Shanghai', 31.23, 121.47, 28.5],
    ['Shenzhen', 22.54, 114.06, 13.0],
    ['Hong Kong', 22.32, 114.17, 7.5],
    ['Taipei', 25.03, 121.57, 7.0],
    ['Singapore', 1.35, 103.82, 5.9],
    ['Jakarta', -6.21, 106.85, 33.4],
    ['Bangkok', 13.76, 100.5, 17.1],
    ['Manila', 14.6, 120.98, 14.4],
    ['Kuala Lumpur', 3.14, 101.69, 8.4],
    ['Ho Chi Minh City', 10.82, 106.63, 9.3],
    ['Mumbai', 19.08, 72.88, 21.3],
    ['Delhi', 28.7, 77.1, 32.9],
    ['Bangalore', 12.97, 77.59, 13.6],
    ['Dubai', 25.2, 55.27, 3.6],
    ['Tel Aviv', 32.09, 34.78, 4.2],
  ],
  oceania: [
    ['Sydney', -33.87, 151.21, 5.3],
    ['Melbourne', -37.81, 144.96, 5.1],
    ['Auckland', -36.85, 174.76, 1.7],
  ],
  africa: [
    ['Lagos', 6.52, 3.38, 15.9],
    ['Cairo', 30.04, 31.24, 22.2],
    ['Johannesburg', -26.2, 28.05, 6.2],
    ['Nairobi', -1.29, 36.82, 5.3],
  ],
};

/** Every metro, continent by continent in CONTINENTS order, then in table order. */
export const METROS: readonly Metro[] = CONTINENTS.flatMap((continent) => TABLE[continent].map(([name, lat, lon, pop]) => ({ name, continent, lat, lon, pop })));

/**
 * The demand weight of each metro (same order as METROS, summing to 1 over the continents
 * with a positive share): share[continent] × pop ÷ Σ pop of the continent. A continent
 * missing from `share` gets no demand.
 */
export function metroWeights(share: Partial<Record<Continent, number>>): number[] {
  const total = CONTINENTS.reduce((s, c) => s + (share[c] ?? 0), 0);
  const popOf = new Map<Continent, number>();
  for (const m of METROS) popOf.set(m.continent, (popOf.get(m.continent) ?? 0) + m.pop);
  return METROS.map((m) => (total > 0 ? ((share[m.continent] ?? 0) / total) * (m.pop / popOf.get(m.continent)!) : 0));
}
